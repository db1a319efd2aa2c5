"""The exercises' checkers: each accepts its solution (notebooks/solutions/<name>.py) and rejects
at least two plausible wrong answers, with a message that names the case, on the fixed cases and
on cases drawn from a seed (the grading with unseen cases). A right answer that is not what the
task asks for is rejected too, with a message that says what is missing: every kernel exercise
written in PyTorch (or a hook without @triton.jit), a scan without tl.associative_scan, a copy
where strided_scan reads in place, returns_autograd without its autograd.Function or with a
PyTorch backward, n_step_returns with a Python loop over time, a kernel exercise whose returned
tensor is not what the student's kernel wrote (a do-nothing launch and PyTorch's result, a kernel's
output patched up in PyTorch afterwards), an answer computed outside the kernel and copied into the
output by one (its launches replayed on a second draw of the case written into the inputs); and the
shortcuts to the
package's answers (its functions reached through a module, a name, a dict, an integration,
_torch_path, the checker's own cases and references)."""
from __future__ import annotations

import ast
import importlib.util
import inspect
import re
import sys
import textwrap

import numpy as np
from unittest import mock

import pytest
import torch
import triton
import triton.language as tl
from conftest import DEVICE

import rltriton_lite as rl
import rltriton_lite.reference  # noqa: F401 (rl.reference)
import rltriton_lite._triton as rl_triton
import rltriton_lite.profile as rl_profile
import rltriton_lite.returns as rl_returns
from rltriton_lite import exercises


@triton.jit
def _reset_where_zero(a, b):  # a wrong answer's pair (a = 0 its reset) as scan_hook's triple (a, b, reset)
    return a, b, a == 0.0
from rltriton_lite import gae as package_gae
from rltriton_lite.episode import REWARDS, step, values_now_and_next
from rltriton_lite.integrations.verl import compute_gae_advantage_return as verl_gae
from rltriton_lite.tile import load as tile_load
from solution_files import SOLUTIONS, solution, source, with_edits

_PACKAGE_GAE_PROLOGUE = rl_returns._gae_prologue


def shift_left(x):
    """x_{t+1} at t (0 at the end): an off-by-one."""
    return torch.cat([x[..., 1:], torch.zeros_like(x[..., :1])], -1)


def no_flags(flags):
    return torch.zeros_like(flags)


def not_at_the_end(flags):
    """The flags with the window's last step cleared: a bootstrap at a terminal last step."""
    flags = flags.clone()
    flags[..., -1] = False
    return flags


@triton.jit
def _reset_combine(a1, b1, r1, a2, b2, r2):
    return tl.where(r2, a2, a2 * a1), tl.where(r2, b2, b2 + a2 * b1), r1 | r2


@triton.jit
def _combine_swapped(a1, b1, a2, b2):  # the operands' order swapped: (a2, b2) applied first
    return a1 * a2, b1 + a1 * b2


@triton.jit
def _combine_right(a1, b1, a2, b2):
    return a2 * a1, b2 + a2 * b1


@triton.jit
def _chunked_variant(R, G, gamma, T, CHUNK: tl.constexpr, SWAPPED: tl.constexpr, CARRY_AT_END: tl.constexpr,
                     CHUNK_OFF_BY_ONE: tl.constexpr, INT_CARRY: tl.constexpr, LOADS_ROW_0: tl.constexpr = False,
                     FORWARDS: tl.constexpr = False, STORES_ROW_0: tl.constexpr = False,
                     CARRY_UNSCALED: tl.constexpr = False, NO_CARRY: tl.constexpr = False):
    """chunked_scan's solution with one of 00b's mistakes switched on."""
    row = tl.program_id(0)
    if INT_CARRY:
        carry = 0  # made a float by the loop: the interpreter runs it, a GPU compile refuses it
    else:
        carry = 0.0
    n_chunks = tl.cdiv(T, CHUNK)
    for i in range(0, n_chunks):
        c = n_chunks - 1 - i
        if CHUNK_OFF_BY_ONE:
            c = n_chunks - i  # one chunk past the end first, and chunk 0 never
        if FORWARDS:
            c = i  # the chunks first to last, as 00b's chunked cumsum walks them
        t = c * CHUNK + tl.arange(0, CHUNK)
        m = t < T
        first = row * T if not LOADS_ROW_0 else 0  # the mistake: loads without the row's offset
        r = tl.load(R + first + t, mask=m, other=0.0)
        a = tl.where(m, gamma, 1.0)
        if SWAPPED:
            a_s, b_s = tl.associative_scan((a, r), 0, _combine_swapped, reverse=True)
        else:
            a_s, b_s = tl.associative_scan((a, r), 0, _combine_right, reverse=True)
        g = b_s + a_s * carry
        if CARRY_UNSCALED:
            g = b_s + carry  # the carry not discounted to step t
        tl.store(G + (row * T if not STORES_ROW_0 else 0) + t, g, mask=m)
        if CARRY_AT_END:
            carry = tl.sum(tl.where(t == c * CHUNK + CHUNK - 1, g, 0.0), 0)  # the chunk's last step, not its first
        elif not NO_CARRY:  # (NO_CARRY: the carry stays 0, each chunk scanned as if nothing came after it)
            carry = tl.sum(tl.where(t == c * CHUNK, g, 0.0), 0)


_CHUNKED_RIGHT = dict(SWAPPED=False, CARRY_AT_END=False, CHUNK_OFF_BY_ONE=False, INT_CARRY=False)


def _variant(name, kernel, new_output, flags):
    """The launcher ``name``(rewards, terminated, gamma, chunk) of a one-program-per-row variant kernel with
    ``flags`` (its mistakes switched on or off)."""
    def launch(rewards, terminated, gamma, chunk):
        out = new_output(rewards)
        kernel[(rewards.shape[0],)](rewards, terminated, out, gamma, rewards.shape[1], CHUNK=chunk, **flags)
        return out
    launch.__name__ = launch.__qualname__ = name
    return launch


def _chunked_with(**mistake):
    """The launcher chunked_scan(rewards, gamma, chunk) of _chunked_variant with ``mistake`` switched on."""
    def chunked_scan(rewards, gamma, chunk):
        # zeros, not torch.empty: a student's torch.empty may hold anything, a freed right answer included, and
        # the message (and whether the values fail before the store record does) would depend on it
        out = torch.zeros_like(rewards)
        _chunked_variant[(rewards.shape[0],)](rewards, out, gamma, rewards.shape[1], CHUNK=chunk,
                                              **{**_CHUNKED_RIGHT, **mistake})
        return out
    return chunked_scan


@triton.jit
def _reset_combine_swapped(a1, b1, k1, a2, b2, k2):  # the operands swapped: (a2, b2, k2) applied first
    return tl.where(k1, a1, a1 * a2), tl.where(k1, b1, b1 + a1 * b2), k1 | k2


@triton.jit
def _reset_combine_k1_for_k2(a1, b1, k1, a2, b2, k2):  # the solution's select with k1 in place of k2: not associative
    return tl.where(k1, a2, a2 * a1), tl.where(k1, b2, b2 + a2 * b1), k1 | k2


@triton.jit
def _reset_combine_on_k1(a1, b1, k1, a2, b2, k2):  # selects on the first run's flag: associative, the earliest wins
    return tl.where(k1, a1, a2 * a1), tl.where(k1, b1, b2 + a2 * b1), k1 | k2


@triton.jit
def _reset_combine_flag_k2(a1, b1, k1, a2, b2, k2):  # the flag of the run applied second alone: a reset lost
    return tl.where(k2, a2, a2 * a1), tl.where(k2, b2, b2 + a2 * b1), k2


@triton.jit
def _reset_combine_drops_a1(a1, b1, k1, a2, b2, k2):  # a2 where a2 * a1 belongs: right for one step only
    return a2, tl.where(k2, b2, b2 + a2 * b1), k1 | k2


@triton.jit
def _reset_combine_two_out(a1, b1, k1, a2, b2, k2):  # no flag returned: 2 values for a scan of 3 (a review's case)
    return tl.where(k2, a2, a2 * a1), tl.where(k2, b2, b2 + a2 * b1)


@triton.jit
def _reset_scan_variant(R, D, G, gamma, T, CHUNK: tl.constexpr, CARRY_BY_PRODUCT: tl.constexpr,
                        CARRY_READ: tl.constexpr, CARRY_MULTIPLIED: tl.constexpr, DROPS_A1: tl.constexpr = False,
                        SWAPPED: tl.constexpr = False, ON_K1: tl.constexpr = False, FLAG_K2: tl.constexpr = False,
                        K1_FOR_K2: tl.constexpr = False, TWO_OUT: tl.constexpr = False,
                        BY_PRODUCT: tl.constexpr = False):
    """reset_scan's solution with one of 00c's mistakes switched on (BY_PRODUCT: the episode end as the product
    a_t = gamma (1 - term_t), in pairs, as 00c's section 1 shows it leaking: 0 * NaN = NaN)."""
    row = tl.program_id(0)
    carry = 0.0
    n_chunks = tl.cdiv(T, CHUNK)
    for i in range(0, n_chunks):
        c = n_chunks - 1 - i
        t = c * CHUNK + tl.arange(0, CHUNK)
        m = t < T
        r = tl.load(R + row * T + t, mask=m, other=0.0)
        done = (tl.load(D + row * T + t, mask=m, other=0) != 0) & m
        if DROPS_A1:
            a_s, b_s, r_s = tl.associative_scan((tl.where(m, gamma, 1.0), r, done), 0, _reset_combine_drops_a1,
                                                reverse=True)
        elif SWAPPED:
            a_s, b_s, r_s = tl.associative_scan((tl.where(m, gamma, 1.0), r, done), 0, _reset_combine_swapped,
                                                reverse=True)
        elif ON_K1:
            a_s, b_s, r_s = tl.associative_scan((tl.where(m, gamma, 1.0), r, done), 0, _reset_combine_on_k1,
                                                reverse=True)
        elif FLAG_K2:
            a_s, b_s, r_s = tl.associative_scan((tl.where(m, gamma, 1.0), r, done), 0, _reset_combine_flag_k2,
                                                reverse=True)
        elif K1_FOR_K2:
            a_s, b_s, r_s = tl.associative_scan((tl.where(m, gamma, 1.0), r, done), 0, _reset_combine_k1_for_k2,
                                                reverse=True)
        elif TWO_OUT:
            a_s, b_s, r_s = tl.associative_scan((tl.where(m, gamma, 1.0), r, done), 0, _reset_combine_two_out,
                                                reverse=True)
        elif BY_PRODUCT:
            a_s, b_s = tl.associative_scan((tl.where(m, gamma * (1.0 - done.to(tl.float32)), 1.0), r), 0,
                                           _combine_right, reverse=True)
            r_s = t < 0  # no flag: the product alone cuts
        else:
            a_s, b_s, r_s = tl.associative_scan((tl.where(m, gamma, 1.0), r, done), 0, _reset_combine, reverse=True)
        if CARRY_READ:
            g = b_s + a_s * carry  # the carry read where the composed reset flag is set
        elif CARRY_MULTIPLIED:
            g = b_s + tl.where(r_s, 0.0, a_s) * carry  # 0 * NaN: a NaN carried in from a later chunk leaks
        else:
            g = tl.where(r_s, b_s, b_s + a_s * carry)
        tl.store(G + row * T + t, g, mask=m)
        if CARRY_BY_PRODUCT:
            carry = tl.sum(g * (t == c * CHUNK), 0)  # one element picked by a product, not tl.where: 0 * NaN
        else:
            carry = tl.sum(tl.where(t == c * CHUNK, g, 0.0), 0)


def _reset_scan_with(**mistake):
    return _variant("reset_scan", _reset_scan_variant, torch.empty_like,
                    {**dict(CARRY_BY_PRODUCT=False, CARRY_READ=False, CARRY_MULTIPLIED=False), **mistake})


reset_scan_by_product = _reset_scan_with(BY_PRODUCT=True)  # reset_scan's likeliest wrong answer: 00b's pairs


@triton.jit
def _hooked_returns_of_my_own(X, P, offs, t, m, T):
    r = tl.load(X[0] + offs, mask=m, other=0.0)
    return tl.where(m, P[0], 1.0), r, tl.load(X[1] + offs, mask=m, other=0) != 0


@triton.jit
def _hooked_scan_variant(X, P, Y, T, START, PROLOGUE: tl.constexpr, CHUNK: tl.constexpr, MULTIPLIED: tl.constexpr,
                         NO_CARRY: tl.constexpr, NO_PADDING: tl.constexpr, HARD_CODED: tl.constexpr,
                         CARRY_MULTIPLIED: tl.constexpr, STORE_A: tl.constexpr, FLAG_UNMASKED: tl.constexpr = False):
    """hooked_scan's solution with one of its mistakes switched on."""
    row = tl.program_id(0)
    carry = START
    n_chunks = tl.cdiv(T, CHUNK)
    for i in range(0, n_chunks):
        c = n_chunks - 1 - i
        t = c * CHUNK + tl.arange(0, CHUNK)
        m = t < T
        offs = row * T + t
        if HARD_CODED:
            a, b, k = _hooked_returns_of_my_own(X, P, offs, t, m, T)  # one algorithm's prologue, not PROLOGUE
        else:
            a, b, k = PROLOGUE(X, P, offs, t, m, T)
        if not NO_PADDING:
            a = tl.where(m, a, 1.0)
            b = tl.where(m, b, 0.0)
            if not FLAG_UNMASKED:  # (the slip: the prologue's flag left set on the padding lanes)
                k = k & m
        if MULTIPLIED:  # the reset as a multiplier a = 0: 0 * NaN from a later episode leaks
            a_s, b_s = tl.associative_scan((tl.where(k, 0.0, a), b), 0, _combine_right, reverse=True)
            y = b_s + a_s * carry
        else:
            a_s, b_s, r_s = tl.associative_scan((a, b, k), 0, _reset_combine, reverse=True)
            y = tl.where(r_s, b_s, b_s + a_s * carry)
            if CARRY_MULTIPLIED:  # the combine selects, the carry does not: A_t = 0 times a NaN carry
                y = b_s + a_s * carry
        if STORE_A:
            tl.store(Y + offs, a_s, mask=m)
        else:
            tl.store(Y + offs, y, mask=m)
        if not NO_CARRY:
            carry = tl.sum(tl.where(t == c * CHUNK, y, 0.0), 0)


@triton.jit
def _max_combine(g1, c1, k1, g2, c2, k2):
    return tl.where(k2, g2, g2 * g1), tl.where(k2, c2, tl.maximum(c2, g2 * c1)), k1 | k2


@triton.jit
def _max_combine_swapped(g1, c1, k1, g2, c2, k2):  # the later maps applied after the step, not before it
    return tl.where(k2, g2, g1 * g2), tl.where(k2, c2, tl.maximum(c1, g1 * c2)), k1 | k2


@triton.jit
def _max_combine_multiplied(g1, c1, k1, g2, c2, k2):  # the reset as a factor 0 (g = 0 at an episode end), no select
    return g2 * g1, tl.maximum(c2, g2 * c1), k1 | k2


@triton.jit
def _max_combine_undiscounted(g1, c1, k1, g2, c2, k2):  # c1 not discounted by g2: still associative
    return tl.where(k2, g2, g2 * g1), tl.where(k2, c2, tl.maximum(c2, c1)), k1 | k2


@triton.jit
def _discounted_max_variant(R, D, M, gamma, T, CHUNK: tl.constexpr, ZERO_IDENTITY: tl.constexpr,
                            SWAPPED: tl.constexpr, MULTIPLIED: tl.constexpr, NO_CARRY: tl.constexpr,
                            UNDISCOUNTED: tl.constexpr, FINITE_IDENTITY: tl.constexpr):
    """discounted_max's solution with one of its mistakes switched on."""
    row = tl.program_id(0)
    ident = 0.0 if ZERO_IDENTITY else -1e30 if FINITE_IDENTITY else float("-inf")
    carry = ident
    n_chunks = tl.cdiv(T, CHUNK)
    for i in range(0, n_chunks):
        c = n_chunks - 1 - i
        t = c * CHUNK + tl.arange(0, CHUNK)
        m = t < T
        r = tl.load(R + row * T + t, mask=m, other=ident)
        done = (tl.load(D + row * T + t, mask=m, other=0) != 0) & m
        g = tl.where(m, gamma, 1.0)
        if MULTIPLIED:
            g = tl.where(done, 0.0, g)
        if SWAPPED:
            g_s, c_s, k_s = tl.associative_scan((g, r, done), 0, _max_combine_swapped, reverse=True)
        elif MULTIPLIED:
            g_s, c_s, k_s = tl.associative_scan((g, r, done), 0, _max_combine_multiplied, reverse=True)
        elif UNDISCOUNTED:
            g_s, c_s, k_s = tl.associative_scan((g, r, done), 0, _max_combine_undiscounted, reverse=True)
        else:
            g_s, c_s, k_s = tl.associative_scan((g, r, done), 0, _max_combine, reverse=True)
        if MULTIPLIED:
            out = tl.maximum(c_s, g_s * carry)
        elif NO_CARRY:
            out = c_s
        else:
            out = tl.where(k_s, c_s, tl.maximum(c_s, g_s * carry))
        tl.store(M + row * T + t, out, mask=m)
        carry = tl.max(tl.where(t == c * CHUNK, out, float("-inf")), 0)


@triton.jit
def _max_combine_one_step(g1, c1, k1, g2, c2, k2):  # g2 where the composed g2 * g1 belongs: right for one step only
    return g2, tl.where(k2, c2, tl.maximum(c2, g2 * c1)), k1 | k2


@triton.jit
def _discounted_max_one_step_combine(R, D, M, gamma, T, CHUNK: tl.constexpr):
    """discounted_max with a combine that is right when a run meets one step (a fold, as Triton's own interpreter
    runs a scan) and wrong when it meets a run (a tree), and the carry's discount computed apart, gamma^(steps to
    the next chunk): every value right in a fold, the combine not associative."""
    row = tl.program_id(0)
    carry = float("-inf")
    n_chunks = tl.cdiv(T, CHUNK)
    for i in range(0, n_chunks):
        c = n_chunks - 1 - i
        t = c * CHUNK + tl.arange(0, CHUNK)
        m = t < T
        r = tl.load(R + row * T + t, mask=m, other=float("-inf"))
        done = (tl.load(D + row * T + t, mask=m, other=0) != 0) & m
        g = tl.where(m, gamma, 1.0)
        _, c_s, k_s = tl.associative_scan((g, r, done), 0, _max_combine_one_step, reverse=True)
        ahead = (tl.minimum((c + 1) * CHUNK, T) - t).to(tl.float32)  # steps from t to the next chunk's first
        out = tl.where(k_s, c_s, tl.maximum(c_s, tl.exp(tl.log(gamma) * ahead) * carry))
        tl.store(M + row * T + t, out, mask=m)
        carry = tl.max(tl.where(t == c * CHUNK, out, float("-inf")), 0)


@triton.jit
def _tiled_variant(R, D, G, gamma, B, T, CHUNK: tl.constexpr, ROWS: tl.constexpr, ONE_CARRY: tl.constexpr,
                   CARRY_READ: tl.constexpr, CARRY_AXIS_0: tl.constexpr = False, NO_AXIS: tl.constexpr = False,
                   A_FROM_T: tl.constexpr = False, SWAPPED: tl.constexpr = False, CARRY_AT_END: tl.constexpr = False,
                   SCAN_AXIS: tl.constexpr = 1, CARRY_AT: tl.constexpr = 0):
    """tiled_scan's solution with one of its mistakes switched on."""
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    carry = tl.zeros((ROWS,), dtype=tl.float32)
    n_chunks = tl.cdiv(T, CHUNK)
    for i in range(0, n_chunks):
        c = n_chunks - 1 - i
        t = c * CHUNK + tl.arange(0, CHUNK)
        m = (rows < B)[:, None] & (t < T)[None, :]
        offs = rows[:, None] * T + t[None, :]
        r = tl.load(R + offs, mask=m, other=0.0)
        term = (tl.load(D + offs, mask=m, other=0) != 0) & m
        a = tl.where((t < T)[None, :], gamma, 1.0) if A_FROM_T else tl.where(m, gamma, 1.0)  # (1, CHUNK) from t
        if SWAPPED:
            a_s, b_s, k_s = tl.associative_scan((a, r, term), 1, _reset_combine_swapped, reverse=True)
        else:
            a_s, b_s, k_s = tl.associative_scan((a, r, term), SCAN_AXIS, _reset_combine, reverse=True)
        if NO_AXIS:
            g = tl.where(k_s, b_s, b_s + a_s * carry)  # (ROWS,) against (ROWS, CHUNK): no [:, None]
        elif CARRY_READ:
            g = b_s + a_s * carry[:, None]  # the carry read where the composed reset flag is set
        else:
            g = tl.where(k_s, b_s, b_s + a_s * carry[:, None])
        tl.store(G + offs, g, mask=m)
        if CARRY_AT_END:  # the chunk's last step, as the chunked cumsum's carry
            first = tl.where(t[None, :] == c * CHUNK + CHUNK - 1, g, 0.0)
        else:
            first = tl.where(t[None, :] == c * CHUNK + CARRY_AT, g, 0.0)
        if ONE_CARRY:
            carry = tl.zeros((ROWS,), dtype=tl.float32) + tl.sum(tl.sum(first, 1), 0)  # the tile's rows summed
        elif CARRY_AXIS_0:
            carry = tl.sum(first, 0)  # summed across the rows: one value per step, not per row
        else:
            carry = tl.sum(first, 1)


@triton.jit
def _tiled_row_by_row(R, D, G, gamma, B, T, CHUNK: tl.constexpr, ROWS: tl.constexpr):
    """A program per tile that walks its rows one after another, reset_scan's 1-D scan on each."""
    for j in range(0, ROWS):
        row = tl.program_id(0) * ROWS + j
        carry = 0.0
        n_chunks = tl.cdiv(T, CHUNK)
        for i in range(0, n_chunks):
            c = n_chunks - 1 - i
            t = c * CHUNK + tl.arange(0, CHUNK)
            m = (t < T) & (t * 0 + row < B)  # (a block: a scalar bool cannot mask a block in the interpreter)
            r = tl.load(R + row * T + t, mask=m, other=0.0)
            term = (tl.load(D + row * T + t, mask=m, other=0) != 0) & m
            a_s, b_s, k_s = tl.associative_scan((tl.where(m, gamma, 1.0), r, term), 0, _reset_combine, reverse=True)
            g = tl.where(k_s, b_s, b_s + a_s * carry)
            tl.store(G + row * T + t, g, mask=m)
            carry = tl.sum(tl.where(t == c * CHUNK, g, 0.0), 0)


def _tiled_with(**mistake):
    def tiled_scan(rewards, terminated, gamma, chunk, rows):
        out = torch.zeros_like(rewards)
        B, T = rewards.shape
        _tiled_variant[(triton.cdiv(B, rows),)](rewards, terminated, out, gamma, B, T, CHUNK=chunk, ROWS=rows,
                                                **{**dict(ONE_CARRY=False, CARRY_READ=False), **mistake})
        return out
    return tiled_scan


def _strided_stores_at(strides_of, out=lambda r: torch.empty(r.shape, dtype=r.dtype, device=r.device)):
    """strided_scan's solution storing with another tensor's strides (``strides_of(rewards, out)``)
    into ``out(rewards)``: the loads right, the stores misplaced (a review's cases)."""
    def strided_scan(rewards, terminated, gamma, chunk):
        T, B = rewards.shape
        y = out(rewards)
        wrong = strides_of(rewards, y).stride()
        solution("strided_scan").__globals__["_strided_scan"][(B,)](
            rewards, terminated, y, gamma, T, *rewards.stride(), *terminated.stride(), *wrong, CHUNK=chunk)
        return y
    return strided_scan


def _discounted_max_with(**mistake):
    return _variant("discounted_max", _discounted_max_variant, torch.zeros_like,
                    {**dict(ZERO_IDENTITY=False, SWAPPED=False, MULTIPLIED=False, NO_CARRY=False, UNDISCOUNTED=False,
                            FINITE_IDENTITY=False),
                     **mistake})


def _hooked_scan_with(IGNORES_INITIAL=False, **mistake):
    def hooked_scan(prologue, inputs, params, chunk, initial=0.0):
        X = tuple(x.contiguous() for x in inputs)
        y = torch.zeros(X[0].shape, dtype=torch.float32, device=X[0].device)
        start = 0.0 if IGNORES_INITIAL else float(initial)  # IGNORES_INITIAL: the slip, the carry from 0
        _hooked_scan_variant[(X[0].shape[0],)](X, tuple(float(p) for p in params), y, X[0].shape[1], start,
                                               PROLOGUE=prologue, CHUNK=chunk, **{**dict(
                                                   MULTIPLIED=False, NO_CARRY=False, NO_PADDING=False,
                                                   HARD_CODED=False, CARRY_MULTIPLIED=False, STORE_A=False),
                                               **mistake})
        return y
    return hooked_scan


@triton.jit
def _gae_prologue_bootstraps_at_terminations(X, SX, P, row, t, m, T, ACC: tl.constexpr):
    gamma, lam, term, done, valid = step(X, SX, P, row, t, m, T, ACC)
    v, v_next = values_now_and_next(X, SX, row, t, m, T, ACC)
    delta = tile_load(X[REWARDS], SX[REWARDS], row, t, valid, 0.0, ACC) + gamma * v_next - v
    return gamma * lam, delta, done, valid, (v,)


@triton.jit
def _gae_prologue_keeps_v_next(X, SX, P, row, t, m, T, ACC: tl.constexpr):  # keep = (V(s_{t+1}),), not (V(s_t),)
    gamma, lam, term, done, valid = step(X, SX, P, row, t, m, T, ACC)
    v, v_next = values_now_and_next(X, SX, row, t, m, T, ACC)
    delta = tile_load(X[REWARDS], SX[REWARDS], row, t, valid, 0.0, ACC) + tl.where(term, 0.0, gamma * v_next) - v
    return gamma * lam, delta, done, valid, (v_next,)


@triton.jit
def _gae_prologue_resets_at_terminations(X, SX, P, row, t, m, T, ACC: tl.constexpr):
    gamma, lam, term, done, valid = step(X, SX, P, row, t, m, T, ACC)
    v, v_next = values_now_and_next(X, SX, row, t, m, T, ACC)
    delta = tile_load(X[REWARDS], SX[REWARDS], row, t, valid, 0.0, ACC) + tl.where(term, 0.0, gamma * v_next) - v
    return gamma * lam, delta, term, valid, (v,)


@triton.jit
def _gae_prologue_reads_padding(X, SX, P, row, t, m, T, ACC: tl.constexpr):
    gamma, lam, term, done, valid = step(X, SX, P, row, t, m, T, ACC)
    v, v_next = values_now_and_next(X, SX, row, t, m, T, ACC)
    delta = tile_load(X[REWARDS], SX[REWARDS], row, t, m, 0.0, ACC) + tl.where(term, 0.0, gamma * v_next) - v
    return gamma * lam, delta, done, m, (v,)


@triton.jit
def _gae_prologue_returns_three(X, SX, P, row, t, m, T, ACC: tl.constexpr):  # 00c's triple, not the package's 5
    gamma, lam, term, done, valid = step(X, SX, P, row, t, m, T, ACC)
    v, v_next = values_now_and_next(X, SX, row, t, m, T, ACC)
    delta = tile_load(X[REWARDS], SX[REWARDS], row, t, valid, 0.0, ACC) + tl.where(term, 0.0, gamma * v_next) - v
    return gamma * lam, delta, done


@triton.jit
def _returns_fwd(X, P, offs, t, m, T):
    done = tl.load(X[1] + offs, mask=m, other=0) != 0
    return _reset_where_zero(tl.where(done, 0.0, P[0]), tl.load(X[0] + offs, mask=m, other=0.0))


@triton.jit
def _transposed_same_step(X, P, offs, t, m, T):  # term_t where the recursion needs term_{t-1}
    done = tl.load(X[1] + offs, mask=m, other=0) != 0
    return _reset_where_zero(tl.where(done, 0.0, P[0]), tl.load(X[0] + offs, mask=m, other=0.0))


def _returns_autograd_with(backward, forward=None):
    """returns_autograd with ``backward(ctx, grad)``, the forward's prologue ``forward`` (default _returns_fwd:
    a reset at episode ends only)."""
    class Returns(torch.autograd.Function):
        @staticmethod
        def forward(ctx, rewards, terminated, gamma):
            ctx.save_for_backward(terminated)
            ctx.gamma = gamma
            return exercises.scan_hook(forward or _returns_fwd, (rewards, terminated), (gamma,))

        @staticmethod
        def backward(ctx, grad):
            return backward(ctx, grad), None, None

    return lambda r, d, g: Returns.apply(r, d, g)


@triton.jit
def _vtrace_variant(LR, R, V, NV, D, VS, PG, gamma, rho_bar, c_bar, T, CHUNK: tl.constexpr,
                    WINDOW_END: tl.constexpr, NEXT: tl.constexpr, PAST: tl.constexpr = False,
                    CARRY_AT: tl.constexpr = 0):
    """vtrace_kernel's solution in one kernel, one program per row, with a mistake switched off or on:
    WINDOW_END (the window's last step resets), NEXT (pg reads vs_{t+1}, else vs_t), PAST (pg's v_next
    at the window's last step is vs read at t + 1 = T, the next row's first, not next_values), CARRY_AT
    (the carry handed on is vs at that step of the chunk, 0 the first)."""
    row = tl.program_id(0)
    carry = 0.0
    n_chunks = tl.cdiv(T, CHUNK)
    for i in range(0, n_chunks):
        c = n_chunks - 1 - i
        t = c * CHUNK + tl.arange(0, CHUNK)
        m = t < T
        ratio = tl.exp(tl.load(LR + row * T + t, mask=m, other=0.0))
        v = tl.load(V + row * T + t, mask=m, other=0.0)
        term = (tl.load(D + row * T + t, mask=m, other=0) != 0) & m
        v_next = tl.where(term, 0.0, tl.load(NV + row * T + t, mask=m, other=0.0))
        cs = gamma * tl.minimum(ratio, c_bar)
        delta = tl.load(R + row * T + t, mask=m, other=0.0) + gamma * v_next - v
        reset = term
        if WINDOW_END:
            reset = reset | (t == T - 1)
        b = v + tl.minimum(ratio, rho_bar) * delta - tl.where(reset, 0.0, cs * v_next)
        a_s, b_s, r_s = tl.associative_scan((tl.where(m, cs, 1.0), tl.where(m, b, 0.0), reset), 0,
                                            _reset_combine_right, reverse=True)
        vs = tl.where(r_s, b_s, b_s + a_s * carry)
        tl.store(VS + row * T + t, vs, mask=m)
        carry = tl.sum(tl.where(t == c * CHUNK + CARRY_AT, vs, 0.0), 0)
    tl.debug_barrier()  # (vs of the whole row stored: pg reads it one step on)
    for i in range(0, n_chunks):
        t = i * CHUNK + tl.arange(0, CHUNK)
        m = t < T
        last = t == T - 1
        vs = tl.load(VS + row * T + t + 1, mask=m & ~last, other=0.0)
        if not NEXT:
            vs = tl.load(VS + row * T + t, mask=m, other=0.0)
        after = tl.where(last, tl.load(NV + row * T + t, mask=m & last, other=0.0), vs)
        if PAST:  # (the last row's read past the tensor masked: a 0 there)
            after = tl.load(VS + row * T + t + 1, mask=m & (row * T + t + 1 < tl.num_programs(0) * T), other=0.0)
        after = tl.where(tl.load(D + row * T + t, mask=m, other=0) != 0, 0.0, after)
        rho = tl.minimum(tl.exp(tl.load(LR + row * T + t, mask=m, other=0.0)), rho_bar)
        pg = rho * (tl.load(R + row * T + t, mask=m, other=0.0) + gamma * after - tl.load(V + row * T + t, mask=m))
        tl.store(PG + row * T + t, pg, mask=m)


@triton.jit
def _reset_combine_right(a1, b1, r1, a2, b2, r2):
    return tl.where(r2, a2, a2 * a1), tl.where(r2, b2, b2 + a2 * b1), r1 | r2


def _vtrace_with(**flags):
    def vtrace_kernel(log_rhos, rewards, values, next_values, terminated, gamma, rho_bar, c_bar, chunk):
        vs, pg = torch.empty_like(rewards), torch.empty_like(rewards)
        _vtrace_variant[(rewards.shape[0],)](log_rhos, rewards, values, next_values, terminated, vs, pg, gamma,
                                             rho_bar, c_bar, rewards.shape[1], CHUNK=chunk, **flags)
        return vs, pg
    return vtrace_kernel


def wrong_answers(name: str):
    """(what is wrong, fn): at least two per exercise, each a mistake a student makes."""
    s = solution(name)
    W = {
        "matrix_compose": [
            ("q first, then p", lambda p, q: s(q, p)),
            ("b2 + A1 b1", lambda p, q: (q[0] @ p[0], q[1] + p[0] @ p[1])),
            ("A1 A2 (b right)", lambda p, q: (p[0] @ q[0], q[1] + q[0] @ p[1])),
            ("* for @ (a later review's case)", lambda p, q: (q[0] * p[0], q[0] * p[1] + q[1])),
            ("b1 @ A2: the vector on the left (a round-4 review's case)", lambda p, q: (q[0] @ p[0], p[1] @ q[0] + q[1])),
        ],
        "combine_arrays": [
            ("the reset as a product, b2 + (1 - k2) a2 b1 (the obvious product)",
             lambda f, g: (np.where(g[2], g[0], g[0] * f[0]), g[1] + (~g[2]) * g[0] * f[1], f[2] | g[2])),
            ("the first operand's reset wins (a select on k1)",
             lambda f, g: (np.where(f[2], g[0], g[0] * f[0]), np.where(f[2], g[1], g[1] + g[0] * f[1]), f[2] | g[2])),
            ("the operands swapped (second applied first)", lambda f, g: s(g, f)),
            ("b1 alone where the first operand resets (rounds 52 and 54's case, no hint then)",
             lambda f, g: (np.where(g[2], g[0], g[0] * f[0]), np.where(g[2], g[1], np.where(f[2], f[1], g[1] + g[0] * f[1])),
                           f[2] | g[2])),
            ("the second operand's flag alone", lambda f, g: s(f, g)[:2] + (g[2],)),
            ("and for or", lambda f, g: s(f, g)[:2] + (f[2] & g[2],)),
        ],
        "chunked_reset_scan": [
            ("the carry read at the chunk's last step in time", _chunked_reset_with(carry_at="last")),
            ("the chunks walked from the first in time", _chunked_reset_with(order="first first")),
            ("the reset as a product, a_t = 0 (the obvious product)", _chunked_reset_with(multiply=True)),
            ("the carry read where K is set (no select on the carry)", _chunked_reset_with(select=False)),
            ("carry_in set to the carry the chunk hands on (a round-46 review's case)",
             _chunked_reset_with(carry_in_out=True)),
        ],
        "td_target_kernel": [
            ("ignores terminations", lambda r, v, d, g: s(r, v, no_flags(d), g)),
            ("gamma on the reward", lambda r, v, d, g: s(g * r, v, d, g)),
            ("tl.where's branches swapped (a review's case)", lambda r, v, d, g: s(r, v, ~d, g)),
        ],
        "block_scan": [
            ("a forward scan", lambda r, g, v: s(r.flip(0), g, v).flip(0)),
            ("a combine that drops a1 (right for Triton's own sequential fold: only A shows it)",
             lambda r, g, v: s(r, g, 0.0) + v * g),  # A_t = a_t alone
            ("last_value left out (g = B)", lambda r, g, v: s(r, g, 0.0)),
            ("the padding lanes not the identity (a = gamma past T)", _block_scan_padding_gamma),
            ("a forward scan, and last_value left out (two slips at once: the tenth review's case)",
             lambda r, g, v: solution("block_scan")(r.flip(0), g, 0.0).flip(0)),
            ("last_value times gamma once, B_t + gamma * last_value (a round-27 review's case)",
             lambda r, g, v: s(r, g, 0.0) + g * v),
        ],
        "chunked_scan": [
            ("no carry between chunks", _chunked_with(NO_CARRY=True)),
            ("the chunks walked first to last (c = i, as the chunked cumsum walks them)", _chunked_with(FORWARDS=True)),
            ("the carry taken at the chunk's last step (t == c * CHUNK + CHUNK - 1), not its first",
             _chunked_with(CARRY_AT_END=True)),
            ("the combine's operands in the wrong order ((a2, b2) applied first)", _chunked_with(SWAPPED=True)),
            ("off by one in the reversed chunk index (c = n_chunks - i): chunk 0 never stored",
             _chunked_with(CHUNK_OFF_BY_ONE=True)),
            ("the carry added without A_t (a review's case)", _chunked_with(CARRY_UNSCALED=True)),
        ],
        "tiled_scan": [
            ("one carry for the tile, its rows' values summed", _tiled_with(ONE_CARRY=True)),
            ("the carry read where the composed reset flag is set", _tiled_with(CARRY_READ=True)),
            ("the carry taken at the chunk's last step (a round-37 review's case)", _tiled_with(CARRY_AT_END=True)),
            ("the carry taken at the chunk's second step (a round-63 review's case, the tile's words then)",
             _tiled_with(CARRY_AT=1)),
            ("the scan along axis 0, the tile's rows (rounds 51 and 52's case)", _tiled_with(SCAN_AXIS=0)),
        ],
        "reset_scan": [
            ("an episode end as a product, a_t = gamma (1 - term_t) (00c section 1's leak)", reset_scan_by_product),
            ("the carry multiplied by 0 at a reset, not selected away", _reset_scan_with(CARRY_MULTIPLIED=True)),
            ("the carry read where the composed reset flag is set (g = b + a * carry, no tl.where)",
             _reset_scan_with(CARRY_READ=True)),
            ("the carry picked by tl.sum(g * (t == c * CHUNK)), not tl.where: 0 * NaN",
             _reset_scan_with(CARRY_BY_PRODUCT=True)),
            ("a combine that selects on k1, the run applied first (associative: the earliest reset wins; the ninth "
             "review's case)", _reset_scan_with(ON_K1=True)),
        ],
        "hooked_scan": [
            ("the reset as a multiplier a = 0, not selected", _hooked_scan_with(MULTIPLIED=True)),
            ("the carry multiplied by A_t, not selected (a review's case: NaN from a later chunk leaks)",
             _hooked_scan_with(CARRY_MULTIPLIED=True)),
            ("no carry between chunks", _hooked_scan_with(NO_CARRY=True)),
            ("the prologue's values past the row's end scanned (padding not the identity)",
             _hooked_scan_with(NO_PADDING=True)),
            ("one algorithm's prologue called by name, not PROLOGUE", _hooked_scan_with(HARD_CODED=True)),
            ("the reset flag left set on the padding lanes (no reset & m: a round-46 review's case)",
             _hooked_scan_with(FLAG_UNMASKED=True)),
            ("initial ignored: the carry starts from 0", _hooked_scan_with(IGNORES_INITIAL=True)),
        ],
        "discounted_max": [
            ("0 as max's identity (the first carry and the padding)", _discounted_max_with(ZERO_IDENTITY=True)),
            ("the combine's maps in the wrong order", _discounted_max_with(SWAPPED=True)),
            ("an episode end as a factor 0, not selected", _discounted_max_with(MULTIPLIED=True)),
            ("no carry between chunks", _discounted_max_with(NO_CARRY=True)),
            ("c1 not discounted by g2 in the combine (a later review's case)",
             _discounted_max_with(UNDISCOUNTED=True)),
            ("-1e30 as max's identity, a finite stand-in for -inf (a round-72 review's case, which passed)",
             _discounted_max_with(FINITE_IDENTITY=True)),
        ],
        "strided_scan": [
            ("addresses as if contiguous, t * B + b", lambda r, d, g, c: s(r.as_strided(r.shape, (r.shape[1], 1)),
                                                                            d.as_strided(d.shape, (d.shape[1], 1)), g, c)),
            ("reads rows as columns (the strides swapped)", lambda r, d, g, c: s(r.t(), d.t(), g, c).t()),
            ("terminated read at rewards' strides (the twelfth review's case)",
             lambda r, d, g, c: s(r, d.as_strided(d.shape, r.stride()), g, c)),
            ("the output stored at rewards' strides (a later review's case)", _strided_stores_at(lambda r, out: r)),
            ("the output an empty_like of rewards, stored as if contiguous (a later review's case)",
             _strided_stores_at(lambda r, out: torch.empty(r.shape), out=torch.empty_like)),
        ],
        "returns_autograd": [
            ("backward returns the incoming gradient (no transposed scan)", _returns_autograd_with(lambda ctx, g: g)),
            ("term_t for term_{t-1} in the backward", _returns_autograd_with(lambda ctx, g: exercises.scan_hook(
                _transposed_same_step, (g.contiguous(), ctx.saved_tensors[0]), (ctx.gamma,), reverse=False))),
            ("the forward's last step not a reset (a round-39 review's case)",
             _returns_autograd_of(_returns_fwd, _transposed_right)),
            ("the backward's step 0 not a reset", _returns_autograd_of(
                solution("returns_autograd").__globals__["_returns_prologue"], _transposed_open_start)),
            ("the backward scanned in reverse, as the forward (a later review's case)",
             _returns_autograd_with(lambda ctx, g: exercises.scan_hook(
                 solution("returns_autograd").__globals__["_transposed_prologue"], (g.contiguous(),
                                                                                    ctx.saved_tensors[0]),
                 (ctx.gamma,), reverse=True))),
        ],
        "gae_prologue": [("bootstraps at terminations", _gae_prologue_bootstraps_at_terminations),
                         ("resets only at terminations", _gae_prologue_resets_at_terminations),
                         ("padding read as steps (valid = m)", _gae_prologue_reads_padding),
                         ("returns 00c's triple (a, b, reset): no valid, no keep", _gae_prologue_returns_three),
                         ("keep holds V(s_{t+1}), not V(s_t) (a later review's case)", _gae_prologue_keeps_v_next)],
        "vtrace_kernel": [
            ("c not clipped (c_t = rho_t)", lambda lr, r, v, nv, d, g, rb, cb, c: s(lr, r, v, nv, d, g, rb, 1e9, c)),
            ("rho_bar and c_bar swapped", lambda lr, r, v, nv, d, g, rb, cb, c: s(lr, r, v, nv, d, g, cb, rb, c)),
            ("no reset at the window's last step", _vtrace_with(WINDOW_END=False, NEXT=True)),
            ("pg reads vs_t, not vs_{t+1}", _vtrace_with(WINDOW_END=True, NEXT=False)),
            ("pg's v_next at the window's last step read at t + 1 = T, past the row (a later review's case)",
             _vtrace_with(WINDOW_END=True, NEXT=True, PAST=True)),
            ("the carry at the chunk's last step (a round-75 review's case: the step named, not the slip)",
             _vtrace_with(WINDOW_END=True, NEXT=True, CARRY_AT=63)),
        ],
        "gae_kernel": [
            ("bootstraps at terminations", lambda r, v, nv, d, g, lam, c: s(r + g * d * nv, v, nv, d, g, lam, c)),
            ("lambda = 1", lambda r, v, nv, d, g, lam, c: s(r, v, nv, d, g, 1.0, c)),
            ("the returns stored, advantages + values (a review's case)",
             lambda r, v, nv, d, g, lam, c: s(r, v, nv, d, g, lam, c) + v),
            ("the scan's A_t stored (a review's case)", _gae_kernel_storing_a),
            ("delta without - V(s_t) (round 58's case: the generic words then)",
             lambda r, v, nv, d, g, lam, c: s(r, torch.zeros_like(v), nv, d, g, lam, c)),
            ("the flags loaded without the row's offset: row 0's in every row (a later review's case)",
             _gae_kernel_flags_of_row_0),
            ("no reset: the trace runs across episode ends, delta still cut (a round-74 review's case)",
             _gae_kernel_without_reset),
        ],
        "n_step_returns": [
            ("one step too many", lambda r, nv, d, g, n: s(r, nv, d, g, n + 1)),
            ("ignores terminations", lambda r, nv, d, g, n: s(r, nv, no_flags(d), g, n)),
            ("the bootstrap multiplied by (1 - term) (0 * NaN: the fourth review's case)", _n_step_multiplied),
            ("no t + n < T test: n steps on read past the window (a later review's case)",
             _n_step_with(window_test=False)),
            ("the terminations of t .. t + n counted, one flag too many (a later review's case)",
             _n_step_with(flags_past=1)),
            ("the terminations of t .. t + n - 2 counted, one flag short, V(s_{t+n}) read behind a termination by a "
             "where (a cold review's case)", _n_step_with(flags_past=-1)),
            ("no termination in t .. t + n - 1 counted: the scan form across an episode end (a later review's case)",
             _n_step_with(counts_ends=False)),
            ("the scan form without V(s_{t+n}), the window's end's bootstrap kept (a round-6 review's case)",
             _n_step_with(bootstrap=False)),
            ("the flags' cumsum without its 0 in front: t + 1 .. t + n counted, one step late (a later review's case)",
             _n_step_with(no_zero_in_front=True)),
            ("the terminations of t - 1 .. t + n - 1 counted, ends[t + n] - ends[t - 1] (a later review's case)",
             _n_step_with(from_t_minus_1=True)),
        ],
        "transposed_scan": [("a_t, not a_{t-1}", _transposed_no_shift), ("a_{t+1}", _transposed_wrong_shift),
                            ("step 0 not a reset, the row before's a read there (a round-40 review's case)",
                             _transposed_previous_row)],
        "gae_pairs": [
            ("(b, a) returned, not (a, b) (round 56's case: no hint then)",
             lambda *args: tuple(reversed(s(*args)))),
            ("truncation ignored", lambda r, v, nv, term, trunc, g, lam: s(r, v, nv, term, no_flags(trunc), g, lam)),
            ("a truncation taken as a termination: no bootstrap there (the tenth review's case)",
             lambda r, v, nv, term, trunc, g, lam: s(r, v, nv, term | trunc, no_flags(trunc), g, lam)),
            ("values for next_values", lambda r, v, nv, term, trunc, g, lam: s(r, v, v, term, trunc, g, lam)),
            ("values[t + 1] for next_values (a review's case)", lambda r, v, nv, term, trunc, g, lam: s(
                r, v, torch.cat([v[:, 1:], nv[:, -1:]], 1), term, trunc, g, lam)),
            ("bootstraps at a termination on the window's last step",
             lambda r, v, nv, term, trunc, g, lam: s(r, v, nv, not_at_the_end(term), trunc, g, lam)),
            ("lam left out of the trace: a = gamma (a later review's case)",
             lambda r, v, nv, term, trunc, g, lam: s(r, v, nv, term, trunc, g, 1.0)),
            ("delta_t's bootstrap discounted by gamma * lam (a later review's case)",
             lambda r, v, nv, term, trunc, g, lam: (s(r, v, nv, term, trunc, g, lam)[0],
                                                    r + torch.where(term, 0.0, g * lam * nv) - v)),
            ("the termination multiplied by 0 in b (0 * NaN in the step's own b: linear_scan's reset at a = 0 "
             "cannot select it away)", _gae_pairs_multiplied),
            ("no reset at the window's last step (a review's case)", _gae_pairs_open_end),
        ],
        "q_lambda": [("trace not cut at non-greedy actions", _q_lambda_never_cut),
                     ("no cut at the window's end", _q_lambda_no_window_cut),
                     ("bootstraps from the action taken (SARSA)", _q_lambda_sarsa),
                     ("a tie for the max counted as non-greedy (first argmax)", _q_lambda_argmax_ties),
                     ("next_q's action stride forgotten", _q_lambda_no_stride),
                     ("no reset at a termination: a = gamma lam_t there (a review's case)", _q_lambda_no_term_reset),
                     ("the termination multiplied by 0 in b (0 * NaN in the step's own b: the harness's reset at "
                      "a = 0 cannot select it away)", _q_lambda_multiplied),
                     ("no reset at the window's last step, lam_t = 0 there in b alone (a round-46 review's case)",
                      _q_lambda_no_window_reset),
                     ("no reset at a non-greedy action, lam_t = 0 there in b alone (a round-71 review's case)",
                      _q_lambda_cut_in_b_only)],
        "retrace": [("c not truncated at 1", _retrace_untruncated),
                    ("Q of the taken action for the expectation", _retrace_taken_q),
                    ("gamma missing from a_t (a review's case)", _retrace_no_gamma_in_a),
                    ("the ratio read one step back, at offs - 1 (a later review's case)", _retrace_previous_ratio),
                    ("(1 - term) multiplied in a and b (0 * NaN in the step's own b: the harness's reset at a = 0 "
                     "cannot select it away)", _retrace_multiplied),
                    ("no reset at the window's last step, c = 0 there in b alone (a round-46 review's case)",
                     _retrace_no_window_reset)],
        "vtrace_pg": [("vs_t for vs_{t+1}", _pg_same_step), ("no bootstrap at the window's end", _pg_no_window_end),
                      ("y (vs_t) for y_in at every step, the window's last too (a later review's case: every "
                       "element wrong)", _pg_y_everywhere),
                      ("the advantage's sign flipped (a formula wrong at every step)", _pg_negated),
                      ("the ratio not clipped (a later review's case)", _pg_unclipped),
                      ("the ratio clipped at c_bar (a later review's case)", _pg_clipped_at_c_bar),
                      ("(1 - term) multiplied, not selected: 0 * NaN at a terminal last step (a later review's case)",
                       _pg_times_not_terminated),
                      ("rho (y - V): section 4's on-policy pg0 == vs0 - v taken for the advantage (a cold review's "
                       "case)", _pg_vs_minus_v),
                      ("y - V: vs - V taken for the advantage, right only where c_t = rho_t (a round-67 review's "
                       "case: passes Hint 3's c_bar = rho_bar)", _pg_y_minus_v)],
        "vtrace_fixed_point": [("V^pi: the clip ignored", lambda P, R, pi, mu, g, rb: _bellman(pi, P, R, g)),
                               ("the weights min(rho_bar mu, pi) not normalised",
                                lambda P, R, pi, mu, g, rb: _bellman(np.minimum(rb * mu, pi), P, R, g)),
                               ("the clipped ratios normalised as the policy (mu left out)", _fixed_point_ratios),
                               ("one value for every state (04b section 1's closed form)", _fixed_point_one_state)],
        "dual_clip": [("plain PPO", _plain_ppo), ("dual clip on positive advantages too", _dual_clip_both),
                      ("PPO's clip left out: r A, the dual clip alone (round 56's case: no hint then)",
                       _dual_clip_without_ppo_s_clip),
                      ("the objective, not the loss (the sign flipped)", _dual_clip_negated),
                      ("tl.minimum with c A, a cap where the dual clip is a floor (the tenth review's case)",
                       _dual_clip_as_a_cap),
                      ("a floor of -c, not c A (a later review's case: no hint then)", _dual_clip_floor_constant),
                      ("a floor of c r, not c A (a round-75 review's case: no hint then)", _dual_clip_floor_of_ratio)],
        "ppo_clip_grad": [("the sign flipped: A r where the gradient flows", _pcg_negated),
                          ("0 wherever r is outside the clip range, whatever A's sign", _pcg_zero_outside),
                          ("the clip on the wrong side of A's sign", _pcg_wrong_side),
                          ("0 at ties (<= for <)", _pcg_ties_zero),
                          ("half of -A r at ties", _pcg_ties_half),
                          ("-A: the factor r left out", _pcg_no_ratio)],
        "awac_weights": [("exp without the max subtracted (overflow and underflow)", _awac_with(NO_MAX=True)),
                         ("the lanes past N loaded as 0: in the sum", _awac_with(PAD_ZERO=True)),
                         ("softmax without the factor N", _awac_with(NO_N=True)),
                         ("the max and the sum over the first block only", _awac_with(ONE_BLOCK=True)),
                         ("the running max started at 0, not -inf (a review's case)", _awac_with(MAX_FROM_0=True)),
                         ("the lanes past N loaded as 0 in the max pass only (round 41's case)",
                          _awac_with(PAD_ZERO_IN_MAX=True)),
                         ("the max over the first block only, the sum over all (a later review's case: it passed)",
                          _awac_with(MAX_OF_ONE_BLOCK=True)),
                         ("the max of A, not of A / beta (round 55's case: it passed)", _awac_with(MAX_OF_A=True)),
                         ("A * beta, not A / beta (round 57's case: the generic words then)",
                          lambda advantages, beta: _awac_with()(advantages, 1.0 / beta)),
                         ("one program per block, each normalised on its own (a later review's case)",
                          _awac_per_block),
                         ("one program per block, each normalised on its own and times N (another review's case)",
                          lambda advantages, beta: _awac_per_block(advantages, beta, by_n=True))],
        "two_stage_mean": [
            ("padding counted in n", lambda x: s(x) * x.numel() / (1024 * -(-x.numel() // 1024))),
            ("padding loaded as 1", lambda x: s(x) + (1024 * -(-x.numel() // 1024) - x.numel()) / x.numel()),
            ("not deterministic", lambda x, _calls=[]: _calls.append(1) or s(x) * (1 + 1e-7 * (len(_calls) % 2))),
            ("a finisher of one block, no loop (the partials past 1024 dropped: the sixth review's case)",
             _two_stage_one_block),
            ("a first grid of n // BLOCK programs (a later review's case)", _two_stage_floor_grid),
            ("a first grid of n // BLOCK programs, its partials from torch.empty (round 37's case: memory no "
             "program wrote)", lambda x: _two_stage_floor_grid(x, fill=3057.83)),
            ("a first grid of n // BLOCK programs, its partials from torch.empty holding a small leftover (round "
             "80's case: returned 5.92747e-07, with no hint then)", lambda x: _two_stage_floor_grid(x, fill=5.92747e-07)),
            ("other=1.0 in the first launch's masked load (a later review's case)", _two_stage_other_one),
        ],
        "soft_lambda_targets": [("no entropy on the continuation", _soft_no_entropy),
                                ("V' = min(Q1, Q2) + alpha log pi' (a later review's case)", _soft_value_plus_entropy),
                                ("V' from the larger critic (a later review's case)", _soft_value_larger_critic),
                                ("log pi of step t, not t+1", _soft_same_step),
                                ("lambda kept at the window's last step (a round-7 review's case)",
                                 _soft_lam_at_the_window_end),
                                ("-alpha log pi_{t+1} without its lam (the ninth review's case)",
                                 _soft_entropy_without_lam),
                                ("-alpha log pi_{t+1} in a, multiplying G_{t+1} (a later review's case)",
                                 _soft_entropy_in_a),
                                ("+lam alpha log pi_{t+1}: the continuation's entropy sign flipped (a round-27 "
                                 "review's case)", _soft_entropy_sign),
                                ("+alpha log pi in V' and in the continuation: both signs flipped", _soft_both_signs),
                                ("-lam alpha log pi_{t+1} without the bracket's gamma (a later review's case)",
                                 _soft_entropy_without_gamma),
                                ("(1 - term) multiplied in b (0 * NaN in the step's own b: the harness's reset at "
                                 "a = 0 cannot select it away)", _soft_multiplied),
                                ("reset = term alone: the window's last step not a reset (a round-46 review's case)",
                                 _soft_no_window_reset),
                                ("no select on term: gamma V' added at a termination (a later review's case)",
                                 _soft_no_term_select)],
        "vtrace_floor_bytes": [
            ("no flag byte", lambda B, T, e: B * T * 6 * e),
            ("outputs not counted", lambda B, T, e: B * T * (4 * e + 1)),
            ("an input left out (next_values)", lambda B, T, e: B * T * (5 * e + 1)),
            ("log pi and log mu counted as two tensors (a later review's case)", lambda B, T, e: B * T * (7 * e + 1)),
            ("terminated and truncated: two flags (a later review's case)", lambda B, T, e: B * T * (6 * e + 2)),
            ("counted in bits (a later review's case)", lambda B, T, e: 8 * B * T * (6 * e + 1)),
            ("2-byte floats as half the 4-byte count, flag included (a round-6 review's case)",
             lambda B, T, e: B * T * (6 * 4 + 1) / 2 if e == 2 else B * T * (6 * e + 1)),
        ],
        "cleanrl_advantages": [("dones as terminated, unshifted", _cleanrl_with(lambda d, nd: d)),
                               ("next_done left out", _cleanrl_with(lambda d, nd: torch.cat([d[1:], 0 * nd[None]]))),
                               ("no bootstrap (next_value left out)", _cleanrl_with(bootstrap=False)),
                               ("returns = advantages (values not added)", _cleanrl_with(returns=lambda a, v: a)),
                               ("gamma and lambda swapped in the call of rl.gae (a round-50 review's case)",
                                _cleanrl_with(swapped=True))],
        "launch_model": [("kernel_ms fitted as microseconds (the 1000 forgotten)", _launch_model_with(us_per_ms=1.0)),
                         ("the wall time fitted", _launch_model_with(wall=True)),
                         ("a line through the origin (no t0)", _launch_model_with(origin=True)),
                         ("the bandwidth in GiB/s", _launch_model_with(per_gb=2.0 ** 30)),
                         ("the slope returned as the bandwidth", _launch_model_with(slope=True)),
                         ("x and y swapped in the fit (a review's case)", _launch_model_with(swapped=True)),
                         ("the do_bench time (ms) fitted (a later review's case)", _launch_model_with(clock="ms")),
                         ("the line through the first and last points, not least squares (a cold review's case)",
                          _launch_model_two_points)],
        "lean_gae_loop": [("dones used as terminated, unshifted", _lean_with(lambda d, nd: d)),
                          ("gamma missing from the decay (a review's case)",
                           _lean_with(lambda d, nd: torch.cat([d[1:], nd.reshape(1, -1)]), decay=lambda g, lam: lam)),
                          ("next_done left out", _lean_with(lambda d, nd: torch.cat([d[1:], 0 * nd.reshape(1, -1)]))),
                          ("delta shifted, the decay from dones[t] (a round-7 review's case)",
                           _lean_with(lambda d, nd: torch.cat([d[1:], nd.reshape(1, -1)]),
                                      decay_ended_after=lambda d, nd: d))],
        "host_bound": [("kernel_ms read as microseconds (the 1000 forgotten)", _host_bound_with(us_per_ms=1.0)),
                       ("other implementations' rows counted", _host_bound_with(ours=None)),
                       ("the search stopped at the first shape at or below 2x", _host_bound_with(first_run=True)),
                       ("the do_bench time (ms) taken for the GPU time (a later review's case)",
                        _host_bound_with(clock="ms")),
                       (">= 2x, not more than twice (a round-31 review's case)", _host_bound_with(at_least=True)),
                       ("the host-bound row with the most steps T, not the most elements B * T (a cold review's case: "
                        "it passed)", _host_bound_most_steps),
                       ("more than 1.2x the GPU time, not 2x (a round-50 review's case: told as the unit slip)",
                        _host_bound_with(factor=1.2)),
                       ("more than 10x the GPU time, not 2x", _host_bound_with(factor=10.0)),
                       ("the smallest host-bound shape, min for max (round 55's case: told as a threshold)",
                        _host_bound_with(smallest=True))],
        "awr_weights": [("no clip", _awr_no_clip), ("exp(A * beta)", _awr_times_beta),
                        ("tl.minimum's default drops a NaN advantage (a round-61 review's case: it passed)",
                         _awr_nan_dropped),
                        ("a select on w < max_weight: a NaN compares False (round 70's case)", _awr_nan_compared),
                        ("exp(A): no temperature (the fourth review's case)", _awr_no_beta),
                        ("clipped from below too, at 1 / max_weight (the ninth review's case)", _awr_clipped_both_ways),
                        ("exp(A) / beta (a later review's case)", _awr_exp_over_beta),
                        ("clamped to [1, max_weight] (a later review's case)", _awr_clamped_at_1),
                        ("min(exp(A), max_weight) / beta: clipped, then divided (a later review's case)",
                         _awr_clipped_then_over_beta),
                        ("the clip written as 20, P[1] never read (a later review's case)", _awr_clip_at_20),
                        ("tl.maximum for the clip (a cold review's case)", _awr_max_for_min),
                        ("A / beta clipped at max_weight before the exp (a cold review's case)", _awr_exponent_clipped),
                        ("clipped at 40, not max_weight (a round-50 review's case: told \"not clipped\")",
                         _awr_clipped_at_40),
                        ("clipped at max_weight / 2 (a round-50 review's case)", _awr_clipped_at_half),
                        ("clipped at 100: no weight here reaches it", _awr_clipped_at_100)],
        "gae_segment_map": [
            ("the next rank's first value left out (V(s_{t+1}) = 0 at the last step)", _segment_map_with(next_as="zero")),
            ("the segment's own last value for V(s_{t+1})", _segment_map_with(next_as="own")),
            ("A over n - 1 steps", _segment_map_with(a_steps=-1)),
            ("A = gamma^n", _segment_map_with(a_gamma=True)),
            ("reset from the last step alone", _segment_map_with(reset_at=-1)),
            ("reset from the first step alone", _segment_map_with(reset_at=0)),
            ("B's loop started from next_first_value", _segment_map_with(carry_as_value=True)),
            ("(1 - terminated) multiplied, not selected", _segment_map_with(multiply=True)),
            ("B's loop cut by a factor (1 - terminated), not a select (a round-74 review's case: passed then)",
             _segment_map_with(multiply_b=True)),
            ("B's loop not cut at a termination (round 57's case: no hint then)", _segment_map_with(no_cut=True))],
        "segment_carries": [("composed from the segments before (the forward scan's order)", _carries_from_before),
                            ("a reset multiplied by 0 (0 * NaN leaks)", _carries_multiplied),
                            ("each segment's own map applied (one segment off)", _carries_own_map),
                            ("initial left out (the walk starts from 0)", _carries_without_initial),
                            ("the resets ignored", _carries_without_resets),
                            ("the reset of the next segment, reset[:, s + 1] (a later review's case)",
                             _carries_next_reset),
                            ("the reset of the next segment, reset[:, (s + 1) % S]: the first segment's at the last "
                             "(a round-50 review's case)", _carries_next_reset_at(lambda S: 0)),
                            ("the reset of the next segment, reset[:, min(s + 1, S - 1)]: its own at the last (a "
                             "round-50 review's case)", _carries_next_reset_at(lambda S: S - 1))],
        "segment_grad_carries": [("a reset multiplied by 0 (0 * NaN leaks)", _grad_carries_with(multiply=True)),
                                 ("composed from the last rank back (the forward's order)",
                                  _grad_carries_with(from_last=True)),
                                 ("x[:, r] = what rank r passes on (one rank off)", _grad_carries_with(own=True)),
                                 ("x[:, r + 1] from x[:, r + 1], still 0", _grad_carries_with(reads_next=True)),
                                 ("x[:, r + 1] from rank r + 1's sigma and A", _grad_carries_with(shift=True)),
                                 ("sigma left out where no reset", _grad_carries_with(no_sigma=True)),
                                 ("the resets ignored", _grad_carries_with(resets=False)),
                                 ("the reset of the next rank, reset[:, r + 1]", _grad_carries_with(next_reset=True))],
        "token_gae_pairs": [("plain GAE over every position (the padding's values read)", _token_plain_gae),
                            ("OpenRLHF's: values zeroed by the mask, V(s_{t+1}) read at t + 1", _token_openrlhf),
                            ("OpenRLHF's, the masked tokens selected to 0 (no NaN: named by name)",
                             _token_openrlhf_selected),
                            ("a masked token as a reset (0, 0): the trace cut at every hole", _token_reset_at_holes),
                            ("masked tokens the identity, but V_next read at t + 1 (zero in a hole)",
                             _token_next_by_position),
                            ("b multiplied by the mask, not selected (0 * NaN at a masked token: the seventh "
                             "review's case)", _token_b_multiplied),
                            ("V_next not shifted: each token's own value (a later review's case)",
                             _token_value_scan_with(unshifted=True)),
                            ("the scan of the values with its flag swapped (a later review's case)",
                             _token_value_scan_with(swapped=True)),
                            ("a = gamma at a policy token, not gamma * lam (a later review's case)",
                             _token_decay_gamma),
                            ("the values scanned as they are, not zeroed at the masked tokens (a cold review's case)",
                             _token_values_not_zeroed)],
        "warp_sectors": [("one sector per lane (lanes counted, not sectors)", lambda a, n: len(a)),
                         ("the sectors' bytes, 32 times the count (round 56's case: no hint then)",
                          lambda a, n: 32 * len({s for x in a.tolist() for s in range(x // 32, (x + n - 1) // 32 + 1)})),
                         ("the bytes asked for ÷ 32, as if every load were contiguous",
                          lambda a, n: -(-len(a) * n // 32)),
                         ("only the sector of each load's first byte (a load across a boundary counted once)",
                          lambda a, n: len(np.unique(a // 32))),
                         ("distinct addresses, not sectors", lambda a, n: len(np.unique(a))),
                         ("the last byte taken as address + nbytes (one too many: the fourth review's case)",
                          lambda a, n: len({s for x in a for s in range(int(x) // 32, (int(x) + n) // 32 + 1)})),
                         ("each load's first and last sectors only (a wide load's middle ones left out: a later "
                          "review's case, which passed)", lambda a, n: len(set(a // 32) | set((a + n - 1) // 32))),
                         ("range(first, last): each load's last sector left out (a round-52 review's case, no hint "
                          "then)", lambda a, n: len({s for x in a for s in range(int(x) // 32, (int(x) + n - 1) // 32)}))],
        "resident_programs": [
            ("registers counted per warp, not per thread", lambda r, w, sh: min(32, 64 // w, 65536 // (r * w),
                                                                              233472 // sh if sh else 32)),
            ("registers counted per program, 65536 // regs (a round-52 review's case, named per warp then)",
             lambda r, w, sh: min(32, 64 // w, 65536 // r, 233472 // sh if sh else 32)),
            ("no cap of 32 programs", lambda r, w, sh: min(64 // w, 65536 // (r * 32 * w), 233472 // sh if sh else 64)),
            ("no cap of 64 warps", lambda r, w, sh: min(32, 65536 // (r * 32 * w), 233472 // sh if sh else 32)),
            ("the cap of 32 only where there is no shared memory (Hint 4's line without the 32 in its min: round 38's "
             "case)", lambda r, w, sh: min(64 // w, 65536 // (r * 32 * w), 233472 // sh if sh else 32)),
            ("shared memory left out", lambda r, w, sh: min(32, 64 // w, 65536 // (r * 32 * w))),
            ("the register count rounded up", lambda r, w, sh: min(32, 64 // w, -(-65536 // (r * 32 * w)),
                                                                   233472 // sh if sh else 32)),
            ("228,000 bytes of shared memory: 228 kB for 228 KiB (a round-46 review's case)",
             lambda r, w, sh: min(32, 64 // w, 65536 // (r * 32 * w), 228000 // sh if sh else 32)),
            ("1 KiB of shared memory reserved for each program, as sm_90 does (a round-71 review's case, named 228 kB "
             "then)", lambda r, w, sh: min(32, 64 // w, 65536 // (r * 32 * w), 233472 // (sh + 1024))),
            ("max for min, no shared memory as the SM's 233,472 bytes (a round-50 review's case)",
             lambda r, w, sh: max(32, 64 // w, 65536 // (r * 32 * w), 233472 // sh if sh else 233472)),
            ("max for min, no shared memory left out (a round-50 review's case)",
             lambda r, w, sh: max([32, 64 // w, 65536 // (r * 32 * w)] + ([233472 // sh] if sh else []))),
            ("max for min, no shared memory as no limit, inf", lambda r, w, sh: max(
                32, 64 // w, 65536 // (r * 32 * w), 233472 // sh if sh else float("inf"))),
            ("/ for // (round 55's case: no hint then)", lambda r, w, sh: min(32, 64 / w, 65536 / (r * 32 * w),
                                                                            233472 / sh if sh else 32))],
        "noise_verdict": [
            (">= for >: exactly x apart called faster", lambda o, p, x: 1 if p[0] >= x * o[1] else -1 if o[0] >= x * p[1]
             else 0),
            ("the signs swapped", lambda o, p, x: -s(o, p, x)),
            ("the far ends compared", lambda o, p, x: 1 if p[1] > x * o[0] else -1 if o[1] > x * p[0] else 0),
            ("the middles compared", lambda o, p, x: 1 if sum(p) > x * sum(o) else -1 if sum(o) > x * sum(p) else 0),
            ("the low ends compared", lambda o, p, x: 1 if p[0] > x * o[0] else -1 if o[0] > x * p[0] else 0)],
    }
    return W[name]


# What the message says to some of the wrong answers above, (exercise, mistake) -> a fragment of it: where the
# generic hints would not say what is wrong
W_SAYS = {
    ("awr_weights", "tl.maximum for the clip (a cold review's case)"):
        ("These are AWR's weights with a slip: the clip takes the larger of the two, max(exp(A / beta), max_weight)",
         "tl.minimum(tl.exp(A / beta), max_weight)."),
    ("awr_weights", "A / beta clipped at max_weight before the exp (a cold review's case)"):
        ("no weight is clipped at max_weight = 20: where exp(A / beta) is above 20, yours is exp(A / beta) itself. "
         "Either nothing clips it, or your clip is at a higher threshold, one that no weight here reaches (A / beta "
         "clipped at max_weight before the exp is one: it bounds the weight at exp(max_weight) = 4.85e+08). What "
         "bounds the weight at max_weight is a clip of the weight itself at max_weight, or of A / beta at "
         "ln(max_weight) = 2.996, before the exp.", "tl.minimum(tl.exp(A / beta), max_weight)"),
    ("awr_weights", "clipped at 40, not max_weight (a round-50 review's case: told \"not clipped\")"):
        ("These are AWR's weights with a slip: the weight is clipped at 40, not at max_weight = P[1] = 20. A clip of "
         "the weight bounds it at its own threshold, so that threshold is max_weight itself (or, on A / beta before "
         "the exp, ln(max_weight) = 2.996).", "tl.minimum(tl.exp(A / beta), P[1])"),
    ("awr_weights", "a select on w < max_weight: a NaN compares False (round 70's case)"):
        "a comparison with a NaN is False (tl.where(w < max_weight, w, max_weight) gives max_weight)",
    ("awr_weights", "clipped at max_weight / 2 (a round-50 review's case)"):
        "the weight is clipped at 10, not at max_weight = P[1] = 20.",
    ("awr_weights", "tl.minimum's default drops a NaN advantage (a round-61 review's case: it passed)"):
        ("A NaN advantage got the weight 20, a plausible number: a broken critic would go unnoticed.",
         "tl.minimum(w, max_weight, propagate_nan=tl.PropagateNan.ALL)"),
    ("awr_weights", "clipped at 100: no weight here reaches it"):
        ("no weight is clipped at max_weight = 20", "tl.minimum(tl.exp(A / beta), max_weight)"),
    ("host_bound", "the host-bound row with the most steps T, not the most elements B * T (a cold review's case: it "
                   "passed)"):
        "That is the answer with a slip, one of these: shapes ordered by T (steps), not by their elements B * T; the "
        "smallest such shape",
    ("launch_model", "the line through the first and last points, not least squares (a cold review's case)"):
        ("Hint: Your line goes through two of the rows' points, not the least-squares line through all of them",
         "Fit all the points (least squares): np.polyfit(x, y, 1) over every row kept."),
    ("token_gae_pairs", "the values scanned as they are, not zeroed at the masked tokens (a cold review's case)"):
        ("These are verl's advantages with a slip: the scan of the values reads the masked tokens' values",
         "Zero the values at the masked tokens before that scan, torch.where(mask, values, 0.0)."),
    ("vtrace_pg", "rho (y - V): section 4's on-policy pg0 == vs0 - v taken for the advantage (a cold review's case)"):
        ("Hint: These are the policy-gradient advantages with a slip: your pg is y - V_t, y being the scan's vs_t (or "
         "rho_t times it: rho_t is 1 at every wrong step)", "Return rho * (r + tl.where(term, 0.0, gamma * v_next) - v)"),
    ("vtrace_pg", "y - V: vs - V taken for the advantage, right only where c_t = rho_t (a round-67 review's case: "
     "passes Hint 3's c_bar = rho_bar)"):
        ("y - V_t = rho_t delta_t + gamma c_t (y_{t+1} - V'_t) is the advantage only where c_t = rho_t at every step "
         "(lambda = 1 and c_bar = rho_bar", "Return rho * (r + tl.where(term, 0.0, gamma * v_next) - v)"),
    ("dual_clip", "a floor of c r, not c A (a round-75 review's case: no hint then)"):
        ("your objective's floor is c r, c times the ratio", "c * A), with A the loaded advantage"),
    ("dual_clip", "a floor of -c, not c A (a later review's case: no hint then)"):
        ("your objective's floor is -c, a constant: the dual clip's floor is c A", "c * A), with A the loaded advantage"),
    ("soft_lambda_targets", "no select on term: gamma V' added at a termination (a later review's case)"):
        "was multiplied by zero (0 * NaN = NaN) or added without a select",
    ("vtrace_kernel", "the carry at the chunk's last step (a round-75 review's case: the step named, not the slip)"):
        ("Hint: Your carry is vs at the chunk's last step", "tl.where(t == ci * CHUNK, vs, 0.0)"),
    ("gae_segment_map", "the next rank's first value left out (V(s_{t+1}) = 0 at the last step)"):
        ("Hint: That is B with a slip: your delta at the segment's last step takes V(s_{t+1}) as 0",
         "At the last step, V(s_{t+1}) = next_first_value"),
    ("q_lambda", "bootstraps from the action taken (SARSA)"):
        ("Hint: These are the targets bootstrapped from the Q of the action taken, Q(s_{t+1}, u_{t+1})",
         "(1 - l_t) * max_q"),
    ("gae_kernel", "delta without - V(s_t) (round 58's case: the generic words then)"):
        ("Hint: Your δ_t leaves out - V(s_t): it is r_t + γ V(s_{t+1}) alone", "V(s_t) loaded from values"),
    ("gae_segment_map", "B's loop not cut at a termination (round 57's case: no hint then)"):
        ("your B's loop runs on through a termination", "np.where(terminated[:, t], delta[:, t]"),
    ("gae_segment_map", "A over n - 1 steps"): ("your A multiplies n - 1 factors of gamma lam", "A = (gamma lam)^n"),
    ("gae_segment_map", "reset from the last step alone"):
        ("result 2 (reset): at index (1,)", "terminated.any(axis=1)."),
    ("gae_segment_map", "B's loop started from next_first_value"):
        ("your B starts its advantages from next_first_value, a value", "Start B's loop from 0"),
    ("gae_segment_map", "(1 - terminated) multiplied, not selected"):
        "a value multiplied by 0 that should have been selected away",
    ("gae_segment_map", "B's loop cut by a factor (1 - terminated), not a select (a round-74 review's case: passed then)"):
        ("NaN rewards after a termination inside row 0", "in delta and in B's loop"),
    ("gae_kernel", "no reset: the trace runs across episode ends, delta still cut (a round-74 review's case)"):
        ("Hint: Your trace runs across an episode end: no reset reached the scan", "pass term_t as the reset flag"),
    ("segment_carries", "the reset of the next segment, reset[:, s + 1] (a later review's case)"):
        ("These are the carries with a slip: each segment's map selects on the reset of the next segment",
         "np.where(reset[:, s], B[:, s], B[:, s] + A[:, s] * c)"),
    ("segment_carries", "the reset of the next segment, reset[:, (s + 1) % S]: the first segment's at the last (a "
                        "round-50 review's case)"):
        ("These are the carries with a slip: each segment's map selects on the reset of the next segment",
         "np.where(reset[:, s], B[:, s], B[:, s] + A[:, s] * c)"),
    ("segment_carries", "the reset of the next segment, reset[:, min(s + 1, S - 1)]: its own at the last (a round-50 "
                        "review's case)"):
        ("These are the carries with a slip: each segment's map selects on the reset of the next segment",
         "np.where(reset[:, s], B[:, s], B[:, s] + A[:, s] * c)"),
    ("two_stage_mean", "padding loaded as 1"):
        ("Hint: The lanes past n added something: your sum (mean times n) is off by 1023, that is 1 for each of the "
         "1,023 padding lanes", "Load with other=0.0, so that a padding lane adds 0"),
    ("two_stage_mean", "other=1.0 in the first launch's masked load (a later review's case)"):
        ("expected 0.534193, your function returned 1023.53\nHint: The lanes past n added something: your sum (mean "
         "times n) is off by 1023, that is 1 for each of the 1,023 padding lanes (past n in the first launch, or past "
         "the last partial in the second, blocks of 1024). What does your masked tl.load return there (other=)?",
         "Load with other=0.0, so that a padding lane adds 0, in both launches."),
    ("token_gae_pairs", "a = gamma at a policy token, not gamma * lam (a later review's case)"):
        ("Hint: These are verl's advantages with a slip: your trace decays by gamma per step, not gamma * lam.",
         "At a policy token, a = gamma * lam."),
    ("n_step_returns", "ignores terminations"):
        "NaN or inf where the answer is finite: something that a select (torch.where) or a mask should keep out got in",
    ("tiled_scan", "the carry taken at the chunk's last step (a round-37 review's case)"):
        ("Your carry is G at the chunk's last step", "t[None, :] and tl.sum(..., axis=1), one carry per row of the tile."),
    ("resident_programs", "registers counted per warp, not per thread"): "not per thread",
    ("combine_arrays", "b1 alone where the first operand resets (rounds 52 and 54's case, no hint then)"):
        ("where the first operand resets, your b is b1 alone", "with no select on k1"),
    ("warp_sectors", "range(first, last): each load's last sector left out (a round-52 review's case, no hint then)"):
        ("leaves out each load's last sector", "range(first, last + 1)"),
    ("tiled_scan", "the scan along axis 0, the tile's rows (rounds 51 and 52's case)"):
        ("runs along axis 0, down the tile's rows", "axis=1"),
    ("tiled_scan", "the carry taken at the chunk's second step (a round-63 review's case, the tile's words then)"):
        ("Your carry is G at step c * CHUNK + 1 of the chunk", "Compare t with c * CHUNK itself"),
    ("resident_programs", "registers counted per program, 65536 // regs (a round-52 review's case, named per warp then)"):
        ("counts registers per program or per warp, not per thread", "65536 // (regs * 32 * num_warps)"),
    ("resident_programs", "no cap of 32 programs"): "at most 32 resident programs",
    ("resident_programs", "the cap of 32 only where there is no shared memory (Hint 4's line without the 32 in its min: "
                          "round 38's case)"): "at most 32 resident programs",
    ("resident_programs", "no cap of 64 warps"): "at most 64 warps at once",
    ("resident_programs", "shared memory left out"): "your count leaves out shared memory",
    ("resident_programs", "the register count rounded up"): "rounds up",
    ("resident_programs", "228,000 bytes of shared memory: 228 kB for 228 KiB (a round-46 review's case)"):
        "your shared-memory limit is 228,000 bytes, 228 kB in decimal: the SM's 228 KiB are 228 * 1024 = 233,472",
    ("resident_programs", "1 KiB of shared memory reserved for each program, as sm_90 does (a round-71 review's case, "
     "named 228 kB then)"): "your count reserves 1 KiB of shared memory for each program (shared_bytes + 1024). A real "
                            "sm_90 GPU does, but this exercise's model leaves the reserve out",
    ("noise_verdict", ">= for >: exactly x apart called faster"): "exactly x apart is within the noise",
    ("noise_verdict", "the signs swapped"): "your signs are swapped",
    ("noise_verdict", "the far ends compared"): "than their nearest ends (the low ends, the far ends or the middles",
    ("noise_verdict", "the middles compared"): "than their nearest ends (the low ends, the far ends or the middles",
    ("noise_verdict", "the low ends compared"): "than their nearest ends (the low ends, the far ends or the middles",
    ("soft_lambda_targets", "lambda kept at the window's last step (a round-7 review's case)"):
        ("that step is the window's last step (t = T - 1: what does it bootstrap from?). Your targets keep lambda at "
         "the window's last step", "lam_t = tl.where(m & (t + 1 < T) & ~term, lam, 0.0) in b; a may keep the plain lam"),
    ("lean_gae_loop", "delta shifted, the decay from dones[t] (a round-7 review's case)"):
        ("the trace's decay reads dones[t], unshifted, while delta reads the shifted flag",
         "One nextnonterminal per step, 1 - dones[t + 1]"),
    ("combine_arrays", "the reset as a product, b2 + (1 - k2) a2 b1 (the obvious product)"):
        ("the reset was a multiplication by 0 (0 * NaN = NaN)", "= np.where(k2, b2, b2 + a2 * b1)"),
    ("combine_arrays", "the first operand's reset wins (a select on k1)"):
        ("This is the combine with a slip: your b selects on the first operand's flag", "Select on k2, b = np.where"),
    ("combine_arrays", "the operands swapped (second applied first)"):
        ("This is the combine with a slip: the operands' order is swapped", "B = b2 + a2 * b1 where k2 is clear"),
    ("combine_arrays", "the second operand's flag alone"): ("Your flag is the second operand's alone", "K = k1 | k2"),
    ("combine_arrays", "and for or"): ("set only where both operands reset", "K = k1 | k2, not k1 & k2"),
    ("returns_autograd", "the forward's last step not a reset (a round-39 review's case)"):
        ("Your forward's last step does not reset, so the value past the window", "terminated: term | (t == T - 1)"),
    ("transposed_scan", "step 0 not a reset, the row before's a read there (a round-40 review's case)"):
        ("Your step 0 does not reset, so the value the scan starts from (here inf)", "Return the reset t == 0"),
    ("returns_autograd", "the backward's step 0 not a reset"):
        ("Your backward's step 0 does not reset", "Make step 0 a reset: load term_{t-1} with other=1"),
    ("chunked_reset_scan", "the reset as a product, a_t = 0 (the obvious product)"):
        "Hint: that step is an episode end (a reset: y_t = b_t, nothing after it read, the carry included). A NaN",
    ("chunked_reset_scan", "the carry read where K is set (no select on the carry)"):
        "and the last step of a chunk in time, where the carry from the chunk after it enters",
    ("chunked_reset_scan", "carry_in set to the carry the chunk hands on (a round-46 review's case)"):
        ("Hint: This is the chunked scan with a slip: your carry_in holds the carry that each chunk hands on",
         "Set carry_in for the chunk's steps before the line that updates the carry"),
    ("chunked_reset_scan", "the carry read at the chunk's last step in time"):
        ("Hint: This is the chunked scan with a slip: the carry is read at the chunk's last step in time",
         "Carry = y[start] once the chunk is done"),
    ("chunked_reset_scan", "the chunks walked from the first in time"):
        ("Hint: This is the chunked scan with a slip: the chunks are walked from the first in time",
         "Walk the chunks from the last in time to the first"),
    ("n_step_returns", "the scan form without V(s_{t+n}), the window's end's bootstrap kept (a round-6 review's case)"):
        ("Hint: This is the n-step return with a slip: no bootstrap after the n steps",
         "G_t adds gamma^n V(s_{t+n}), next_values at step t + n - 1"),
    ("vtrace_floor_bytes", "2-byte floats as half the 4-byte count, flag included (a round-6 review's case)"):
        "Hint: that is half of the 4-byte count, the flag's byte halved too",
    ("matrix_compose", "b1 @ A2: the vector on the left (a round-4 review's case)"):
        ("Hint: Your b is b1 @ A2 + b2 (or A2.T @ b1 + b2): b1 went through q's matrix transposed",
         "Put the matrix first: b = A2 @ b1 + b2"),
    ("vtrace_kernel", "pg's v_next at the window's last step read at t + 1 = T, past the row (a later review's case)"):
        ("Your pg at the window's last step reads vs one step on, at t + 1 = T: past the row",
         "There v_next is next_values: tl.where(t == T - 1, next_values, vs_next)"),
    ("dual_clip", "the objective, not the loss (the sign flipped)"):
        "Hint: Every wrong element is the answer with its sign flipped: check the sign of the whole expression",
    ("ppo_clip_grad", "the sign flipped: A r where the gradient flows"):
        ("Hint: Every wrong element is the gradient with its sign flipped",
         "Return -adv * ratio where the gradient flows."),
    ("ppo_clip_grad", "0 wherever r is outside the clip range, whatever A's sign"):
        ("Your gradient is 0 at elements outside the clip range where it must flow",
         "tl.where(clipped * adv < ratio * adv, 0.0, -adv * ratio)"),
    ("ppo_clip_grad", "the clip on the wrong side of A's sign"):
        ("Your gradient is 0 at elements outside the clip range where it must flow",
         "tl.where(clipped * adv < ratio * adv, 0.0, -adv * ratio)"),
    ("ppo_clip_grad", "0 at ties (<= for <)"):
        ("Your gradient is 0 at ties, where r A = clip(r) A", "(<, not <=)"),
    ("ppo_clip_grad", "half of -A r at ties"):
        ("Your gradient at ties is half of -A r", "At a tie return -adv * ratio"),
    ("ppo_clip_grad", "-A: the factor r left out"):
        ("Your gradient is -A where it flows: the factor r is missing",
         "Return -adv * ratio where the gradient flows."),
    ("gae_prologue", "keep holds V(s_{t+1}), not V(s_t) (a later review's case)"):
        "result 1 (returns): the error starts at the latest wrong step, index (0, 89) expected -0.0921065, got -0.260225 (270 of "
        "270 elements wrong)\nHint: The advantages are right and the returns are not: the epilogue stores the returns as "
        "y + keep[0], so check what keep hands it",
    ("awr_weights", "clamped to [1, max_weight] (a later review's case)"):
        ("Hint: These are AWR's weights with a slip: a clip from below too (at 1)",
         "Clip from above only, tl.minimum(w, max_weight)."),
    ("awr_weights", "exp(A) / beta (a later review's case)"):
        ("Hint: These are AWR's weights with a slip: exp(A) / beta, the exponential divided by the temperature.",
         "The temperature divides the advantage inside the exp, exp(A / beta)."),
    ("awr_weights", "min(exp(A), max_weight) / beta: clipped, then divided (a later review's case)"):
        ("Hint: These are AWR's weights with a slip: min(exp(A), max_weight) / beta, the clipped exponential divided "
         "by the temperature", "The temperature divides the advantage inside the exp, exp(A / beta); clip that at "
                               "max_weight, last."),
    ("awr_weights", "exp(A): no temperature (the fourth review's case)"):
        ("Hint: These are AWR's weights with a slip: exp(A) without the temperature.", "Divide the advantage by beta."),
    ("block_scan", "a forward scan, and last_value left out (two slips at once: the tenth review's case)"):
        ("Hint: Your scan runs forwards (reverse=False): a return is built from the row's end. (And last_value is "
         "left out: it reaches step t through A_t.)", "Scan with reverse=True, then G_t = B_t + A_t * last_value."),
    ("chunked_scan", "the carry taken at the chunk's last step (t == c * CHUNK + CHUNK - 1), not its first"):
        ("Hint: Your carry is G at the chunk's last step, as the chunked cumsum's is.",
         "Pick the carry with tl.where(t == c * CHUNK, g, 0.0), summed."),
    ("gae_pairs", "truncation ignored"):
        ("cut: a reset). Your trace runs on through a truncation.", "Set a = 0 where terminated or truncated."),
    ("gae_pairs", "a truncation taken as a termination: no bootstrap there (the tenth review's case)"):
        ("). Your truncated steps do not bootstrap.", "Select next_values away where terminated only."),
    **{(name, what): ("Hint: Your window's last step does not reset, so the value past the window (here 100",
                      "Set the reset at the window's last step too") for name, what in (
        ("soft_lambda_targets", "reset = term alone: the window's last step not a reset (a round-46 review's case)"),
        ("q_lambda", "no reset at the window's last step, lam_t = 0 there in b alone (a round-46 review's case)"),
        ("retrace", "no reset at the window's last step, c = 0 there in b alone (a round-46 review's case)"))},
    ("q_lambda", "no reset at a non-greedy action, lam_t = 0 there in b alone (a round-71 review's case)"):
        ("Your b bootstraps fully where the next action is not greedy (lambda_t = 0 there), but the carry still goes "
         "on through a = gamma lam", "reset = term | ~greedy | (t == T - 1)"),
    ("gae_pairs", "no reset at the window's last step (a review's case)"):
        ("Hint: Your window's last step does not reset, so the value past the window (here 100",
         "Set a = 0 at the last step (t = T - 1) as well as where terminated or truncated."),
    ("gae_pairs", "lam left out of the trace: a = gamma (a later review's case)"):
        ("Hint: Your trace decays by gamma per step, not gamma * lam", "Set a = gamma * lam (0 at every episode end)."),
    ("gae_pairs", "delta_t's bootstrap discounted by gamma * lam (a later review's case)"):
        ("Your delta_t discounts next_values by gamma * lam", "Set b = r + gamma * V(s_{t+1}) - V(s_t), without lam."),
    ("gae_kernel", "bootstraps at terminations"):
        ("Hint: Your δ_t at a termination still reads γ V(s_{t+1}), added as it is or multiplied by 0: a terminal state has no next value, and 0 × NaN is NaN.",
         "Select it away there (tl.where), δ_t = r_t - V(s_t)."),
    ("gae_pairs", "(b, a) returned, not (a, b) (round 56's case: no hint then)"):
        ("Hint: Your function returns the pair as (b, a): the checker scans linear_scan(a, b)",
         "a, b (the multipliers first)"),
    ("warp_sectors", "the sectors' bytes, 32 times the count (round 56's case: no hint then)"):
        ("that is 32 times the answer: the bytes the sectors hold", "Return the count of distinct sectors"),
    ("dual_clip", "PPO's clip left out: r A, the dual clip alone (round 56's case: no hint then)"):
        ("Hint: Your loss leaves out PPO's clip: where the ratio r lies outside [1 - eps, 1 + eps] it uses r A",
         "The objective is min(r A, clip(r, 1-eps, 1+eps) A)"),
    ("dual_clip", "tl.minimum with c A, a cap where the dual clip is a floor (the tenth review's case)"):
        ("Hint: Where A < 0 your loss holds the smaller of the objective and c A",
         "For A < 0: -max(min(r A, clip(r) A), c A), tl.maximum."),
    ("awr_weights", "clipped from below too, at 1 / max_weight (the ninth review's case)"):
        ("Hint: These are AWR's weights with a slip: a clip from below too (at 1 / max_weight)",
         "Clip from above only, tl.minimum(w, max_weight)."),
    ("awac_weights", "exp without the max subtracted (overflow and underflow)"):
        ("Hint: exp(A / beta) overflowed to inf or underflowed to 0 (in float32 exp(x) is inf above x = 88.7 and 0 "
         "below about -104; here A / beta runs from",
         "Subtract the max of A / beta before the exp (the softmax is unchanged by a shift), start the running max "
         "at -inf, and load the lanes past N as -inf."),
    ("awac_weights", "the lanes past N loaded as 0: in the sum"):
        ("your sum of the exponentials holds terms it should not, the lanes past N?",
         'Load them as -inf (other=float("-inf")): exp gives 0 there, and the max ignores them.'),
    ("awac_weights", "the lanes past N loaded as 0 in the max pass only (round 41's case)"):
        "N is not a whole number of blocks: lanes past N loaded as 0 make the max 0",
    ("awac_weights", "the running max started at 0, not -inf (a review's case)"):
        "a running max that starts at 0, not -inf, stays 0 and subtracts nothing",
    ("awac_weights", "softmax without the factor N"):
        ("Hint: These are softmax's probabilities, which sum to 1", "Multiply by N, the number of advantages."),
    ("returns_autograd", "the backward scanned in reverse, as the forward (a later review's case)"):
        ("Hint: Your backward scans backwards in time, as the forward does",
         "In the backward, scan_hook(..., reverse=False)."),
    ("block_scan", "last_value times gamma once, B_t + gamma * last_value (a round-27 review's case)"):
        ("Hint: Your returns add last_value to every step discounted once (B_t + gamma * last_value)",
         "G_t = B_t + A_t * last_value, with a2 * a1 as the combine's a part."),
    ("soft_lambda_targets", "+lam alpha log pi_{t+1}: the continuation's entropy sign flipped (a round-27 review's "
                            "case)"):
        "Hint: Your continuation's entropy term has the wrong sign: + lam alpha log_probs_{t+1}",
    ("soft_lambda_targets", "+alpha log pi in V' and in the continuation: both signs flipped"):
        "Hint: Your soft value V'_t adds alpha log pi(u'|s_{t+1})",  # (the first case, lambda = 0, shows V' alone)
    ("matrix_compose", "* for @ (a later review's case)"):
        "result 1 (b): expected shape (1,), got (1, 1)\nHint: one dimension too many: * between a matrix and a "
        "vector multiplies element by element and broadcasts to a matrix; the matrix product is @.",
    ("awac_weights", "one program per block, each normalised on its own (a later review's case)"):
        ("Hint: Within each block of 1024 your weights are right up to one factor, but the factor changes from block "
         "to block: each block is normalised on its own",
         "One program, whose three passes each loop over every block: for start in range(0, n, BLOCK)."),
    ("awac_weights", "one program per block, each normalised on its own and times N (another review's case)"):
        "Hint: Within each block of 1024 your weights are right up to one factor",
    ("two_stage_mean", "a first grid of n // BLOCK programs, its partials from torch.empty (round 37's case: memory no "
                       "program wrote)"):
        ("it looks like memory that no program wrote. Does the first launch have a program for the last, partial "
         "block?", "The first launch's grid: (triton.cdiv(n, BLOCK),)."),
    ("two_stage_mean", "a first grid of n // BLOCK programs, its partials from torch.empty holding a small leftover "
                       "(round 80's case: returned 5.92747e-07, with no hint then)"):
        ("your function returned 5.92747e-07\nHint: At n = 1 your mean, 5.92747e-07, is not the input's one value, "
         "0.534193: it looks like memory that no program wrote. Does the first launch have a program for the last, "
         "partial block? n // BLOCK is 0 here, so the second stage read uninitialised memory",
         "The first launch's grid: (triton.cdiv(n, BLOCK),)."),
    ("two_stage_mean", "a first grid of n // BLOCK programs (a later review's case)"):
        ("n=1: expected 0.534193, your function returned 0\nHint: That is the sum of the full blocks only, over n "
         "(0 where n < BLOCK, or whatever an unwritten partial held): the last, partial block had no program.",
         "The first launch's grid: (triton.cdiv(n, BLOCK),)."),
    ("vtrace_floor_bytes", "counted in bits (a later review's case)"):
        "your function returned 200, not the count expected\nHint: that is the count in bits: the task asks for bytes",
    ("awac_weights", "the max and the sum over the first block only"):
        ("your sum of the exponentials misses terms. Does each pass walk all N = 2500 elements, block by block?",
         "Loop over the blocks in every pass: for start in range(0, n, BLOCK)."),
    ("cleanrl_advantages", "dones as terminated, unshifted"):
        ("Hint: These are CleanRL's advantages with a slip: dones used as terminated, unshifted.",
         "terminated[t] = dones[t + 1], and next_done at the last step (torch.cat)."),
    ("cleanrl_advantages", "next_done left out"):
        ("your code still bootstraps there from next_value; it must not.", "The last row of terminated is next_done."),
    ("cleanrl_advantages", "no bootstrap (next_value left out)"):
        ("no bootstrap at the rollout's end", "next_value is the value after the last step: rl.gae's "
         "bootstrap_value, or, in a loop of your own, the last row of the next values"),
    ("cleanrl_advantages", "returns = advantages (values not added)"):
        "result 1 (returns): the error starts at the latest wrong step, index (7, 0) expected -1.62987, got -2.91153 (24 of "
        "24 elements wrong)\nHint: Your returns are the advantages: CleanRL's returns are advantages + values.",
    ("launch_model", "kernel_ms fitted as microseconds (the 1000 forgotten)"):
        ("That is the fit with a slip: kernel_ms (milliseconds) fitted as if it were in µs.",
         "The GPU time in µs is 1000 * kernel_ms."),
    ("launch_model", "the wall time fitted"):
        ("the wall time (full_call_us) fitted: it holds the host's time per call too.",
         "Fit the GPU time, 1000 * kernel_ms."),
    ("launch_model", "a line through the origin (no t0)"):
        ("a line through the origin: t0 forced to 0.", "Fit the intercept too (np.polyfit(x, y, 1))."),
    ("launch_model", "x and y swapped in the fit (a review's case)"):
        ("x and y swapped: the bytes fitted against the time, so the intercept is in bytes.",
         "np.polyfit(x, y, 1) fits y against x"),
    ("launch_model", "the bandwidth in GiB/s"):
        "result 1 (GBps): expected 3000, got 2793.97\nHint: That is the fit with a slip: the bandwidth in GiB/s "
        "(2**30 bytes), not GB/s (10**9).",
    ("launch_model", "the slope returned as the bandwidth"):
        ("Your bandwidth is the line's slope (µs per byte), not a bandwidth.",
         "The bandwidth is 1 / slope bytes per µs, that is 10**6 / slope bytes per second."),
    ("segment_carries", "composed from the segments before (the forward scan's order)"):
        ("These are the carries with a slip: composed from the segments before it, a forward scan's order",
         "Walk the segments from the last one back."),
    ("segment_carries", "each segment's own map applied (one segment off)"):
        ("each one is the value at its own segment's first step, one segment off",
         "Store the carry, then apply segment s's map to it for the segment before."),
    ("segment_carries", "initial left out (the walk starts from 0)"):
        ("initial left out: the value after the last segment is initial, not 0.", "Start the walk from initial."),
    ("segment_carries", "the resets ignored"):
        ("the resets ignored: where reset[:, s] is set, the segment gives B[:, s] alone.",
         "np.where(reset[:, s], B[:, s], B[:, s] + A[:, s] * c)."),
    ("segment_grad_carries", "a reset multiplied by 0 (0 * NaN leaks)"):
        ("that rank is the rank after one that resets", "np.where(reset[:, r], sigma[:, r], sigma[:, r] + A[:, r] * x[:, r])"),
    ("segment_grad_carries", "composed from the last rank back (the forward's order)"):
        ("These are the gradients with a slip: composed from the ranks after it, starting from the last rank",
         "Walk the ranks from the first: x[:, 0] = 0, then x[:, r + 1] from x[:, r]."),
    ("segment_grad_carries", "x[:, r] = what rank r passes on (one rank off)"):
        ("one rank off: x[:, r] is what enters rank r, x_r, not what rank r passes on",
         "Store what rank r passes on at r + 1"),
    ("segment_grad_carries", "x[:, r + 1] from x[:, r + 1], still 0"):
        ("the term A[:, r] * x[:, r] left out (or read as 0, from x[:, r + 1] before it is written)",
         "x[:, r] the column already written"),
    ("segment_grad_carries", "sigma left out where no reset"):
        ("the sigma term left out where the rank does not reset", "x[:, r + 1] = sigma[:, r] + A[:, r] * x[:, r]."),
    ("segment_grad_carries", "the reset of the next rank, reset[:, r + 1]"):
        ("each rank selects on the reset of the next rank, reset[:, r + 1]",
         "np.where(reset[:, r], sigma[:, r], sigma[:, r] + A[:, r] * x[:, r])."),
    ("td_target_kernel", "tl.where's branches swapped (a review's case)"):
        ("Your tl.where's two branches are swapped", "tl.where(cond, x, y) gives x where cond is true"),
    ("gae_kernel", "the returns stored, advantages + values (a review's case)"):
        ("Your kernel stores the returns, advantages + V(s_t)", "Store the scanned values y_t themselves."),
    ("hooked_scan", "the reset flag left set on the padding lanes (no reset & m: a round-46 review's case)"):
        ("The case on whole chunks, initial = 10 too, passed: your carry starts from initial. Here the last chunk has "
         "padding lanes past T", "Make the padding lanes the identity, the flag included: reset = reset & m."),
    ("hooked_scan", "initial ignored: the carry starts from 0"):  # (round 59: one message for both before)
        ("initial = 10 here, never entered. This row is whole chunks, with no padding lanes: your carry does not start "
         "from initial.", "Pass initial to the kernel and start the carry there: carry = START."),
    ("hooked_scan", "the reset as a multiplier a = 0, not selected"):
        "A NaN crossed an episode end: the prologue's reset flag is not selected on everywhere it must be",
    ("awr_weights", "the clip written as 20, P[1] never read (a later review's case)"):
        ("These are AWR's weights with a slip: the clip is 20, not max_weight = P[1] (here 3)", "Clip at P[1]"),
    ("gae_kernel", "the flags loaded without the row's offset: row 0's in every row (a later review's case)"):
        ("Row 0 is right and later rows are partly wrong: row 0 is the one row where a load that ignores the row",
         "Give every load the row's offset: row * T for a (B, T) input, row for a (B,) one."),
    ("gae_kernel", "the scan's A_t stored (a review's case)"):
        ("Your kernel stores A_t, the scan's product of the decays to the chunk's end", "Store y_t = B_t where K_t"),
    ("chunked_scan", "the carry added without A_t (a review's case)"):
        ("Your carry enters every step of the chunk added as it is.", "Multiply the carry by the scanned A_t."),
    ("awac_weights", "the running max started at 0, not -inf (a review's case)"):
        ("a running max that starts at 0, not -inf, stays 0 and subtracts nothing", "start the running max at -inf"),
    ("lean_gae_loop", "dones used as terminated, unshifted"):
        ("These are CleanRL's advantages with a slip: dones used as terminated, unshifted.",
         "terminated[t] = dones[t + 1], and next_done at the last step (torch.cat)."),
    ("lean_gae_loop", "gamma missing from the decay (a review's case)"):
        ("gamma is missing from your decay", "Decay = gamma * gae_lambda where the episode goes on"),
    ("lean_gae_loop", "next_done left out"):
        ("your code still bootstraps there from next_value; it must not.", "The last row of terminated is next_done."),
    ("q_lambda", "no reset at a termination: a = gamma lam_t there (a review's case)"):
        "that step is a termination (no bootstrap; the trace is cut: a reset)",
    ("q_lambda", "next_q's action stride forgotten"):
        ("These are the targets of next_q read at offs + a", "Load tl.load(X[1] + offs * n_actions + a, ...)."),
    ("retrace", "gamma missing from a_t (a review's case)"):
        ("These are Retrace's targets with G_{t+1} undiscounted", "a_t = gamma (1 - term_t) c_{t+1}"),
    ("gae_pairs", "values[t + 1] for next_values (a review's case)"):
        ("Your delta_t reads values[t + 1], the next step's value", "Read next_values[t]"),
    ("host_bound", "kernel_ms read as microseconds (the 1000 forgotten)"):
        ("Hint: The answer is 64x16384; yours is 16384x1024. That is the answer with a slip: kernel_ms "
         "(milliseconds) compared with full_call_us (microseconds) as if in one unit.",
         "The GPU time in µs is 1000 * kernel_ms."),
    ("cleanrl_advantages", "gamma and lambda swapped in the call of rl.gae (a round-50 review's case)"):
        ("Hint: These are CleanRL's advantages with a slip: gamma and lambda swapped. Your delta_t discounts the next "
         "value by lambda (gae_lambda), where gamma belongs", "in rl.gae, gamma=gamma and lambda_=gae_lambda"),
    ("resident_programs", "max for min, no shared memory as the SM's 233,472 bytes (a round-50 review's case)"):
        ("Hint: your count is the largest of the limits, not the smallest: each limit caps the programs by itself, "
         "so the SM holds only as many as the tightest one allows.", "Take min(...) of the four counts, not max"),
    ("resident_programs", "/ for // (round 55's case: no hint then)"):
        ("expected 10, your function returned 10.6667\nHint: your count, 10.67, is not a whole number: a true division "
         "(/) in a limit. A program is resident whole or not at all, so each limit's count rounds down.",
         "Use // (floor division) in every limit."),
    ("host_bound", "the smallest host-bound shape, min for max (round 55's case: told as a threshold)"):
        ("Hint: The answer is 64x16384; yours is 16x128. That is the answer with a slip, one of these: the smallest such "
         "shape, where the task asks for the largest; a threshold above the task's 2x",
         "Keep the last shape above 2x in order of B * T (max, not min)."),
    ("resident_programs", "max for min, no shared memory left out (a round-50 review's case)"):
        ("Hint: your count is the largest of the limits, not the smallest: each limit caps the programs by itself, "
         "so the SM holds only as many as the tightest one allows.", "Take min(...) of the four counts, not max"),
    ("resident_programs", "max for min, no shared memory as no limit, inf"):
        ("Hint: your count is the largest of the limits, not the smallest: each limit caps the programs by itself, "
         "so the SM holds only as many as the tightest one allows.", "Take min(...) of the four counts, not max"),
    ("host_bound", "more than 1.2x the GPU time, not 2x (a round-50 review's case: told as the unit slip)"):
        ("That is the answer with a slip: a threshold below the task's 2x: at your shape the wall time is 1.54 times "
         "the GPU time, not more than twice, so that shape is not host-bound by the task's rule.",
         "full_call_us > 2 * 1000 * kernel_ms"),
    ("host_bound", "more than 10x the GPU time, not 2x"):
        ("That is the answer with a slip, one of these: the smallest such shape, where the task asks for the largest; "
         "a threshold above the task's 2x: at the answer's shape the wall time is 2.93 times the GPU time, more than "
         "twice, so that shape counts.", "full_call_us > 2 * 1000 * kernel_ms"),
    ("host_bound", ">= 2x, not more than twice (a round-31 review's case)"):
        ("That is the answer with a slip: a shape at exactly twice its GPU time counted, where the task asks for "
         "more than twice.", "full_call_us > 2 * the GPU time, not >=."),
    ("host_bound", "the search stopped at the first shape at or below 2x"):
        ("one of these: the search stops at the first shape at or below 2x, but the ratio can rise again at a larger "
         "shape; the smallest such shape, where the task asks for the largest.",
         "Look at every shape."),
    ("vtrace_floor_bytes", "log pi and log mu counted as two tensors (a later review's case)"):
        "one float tensor too many: notebook 04's kernel reads four (rewards, values, next_values and log_rhos, the "
        "importance weights in one tensor, log pi - log mu, not two log-probabilities) and writes two",
    ("vtrace_floor_bytes", "terminated and truncated: two flags (a later review's case)"):
        "one flag too many: notebook 04's call reads one, terminated",
    ("vtrace_floor_bytes", "an input left out (next_values)"):
        "one tensor of elem_bytes per step is missing: one of the four float inputs",
    ("vtrace_fixed_point", "V^pi: the clip ignored"):
        # (on 04b's one state the clipped ratios, mu left out, normalise to pi itself: both slips are named)
        ("one state (as in 04b, section 1: pi/mu > 1 on action 0), gamma = 0.9, rho_bar = 1; compared: the mean "
         "correction with your V, state by state (0 at the fixed point): at index (0,) expected 0, "
         "got -0.12 (1 of 1 elements wrong)\nHint: Your V is V^pi, pi's own value, which two slips give on this case. "
         "Either your V ignores the clip: V^pi is V-trace's fixed point, in general, only where no weight is clipped (or "
         "all are clipped by one factor); here rho_bar = 1 clips pi/mu = 4. Or it normalises the clipped ratios "
         "min(rho_bar, pi/mu) state by state as the policy, mu left out: here those ratios, (1, 0.25), normalise to pi "
         "itself, (0.8, 0.2), a coincidence of this case",
         "Normalise the weights min(rho_bar mu, pi) = mu(u|s) min(rho_bar, pi/mu) state by state (the policy "
         "pi_rho_bar): the clip applied, and mu in the weights."),
    ("vtrace_fixed_point", "the clipped ratios normalised as the policy (mu left out)"):
        ("Or it normalises the clipped ratios min(rho_bar, pi/mu) state by state as the policy, mu left out: here those "
         "ratios, (1, 0.25), normalise to pi itself, (0.8, 0.2), a coincidence of this case",
         "Normalise the weights min(rho_bar mu, pi) = mu(u|s) min(rho_bar, pi/mu) state by state"),
    ("vtrace_pg", "vs_t for vs_{t+1}"):
        ("Hint: These are the policy-gradient advantages with a slip: your v_next is y where y_in belongs, inside the "
         "window (at its last step you read next_values, which is right). y is vs_t, the scan's value at step t itself",
         "v_next = y_in inside the window, next_values at its last step: tl.where(t == T - 1, next_values, y_in)."),
    ("vtrace_pg", "y (vs_t) for y_in at every step, the window's last too (a later review's case: every element wrong)"):
        ("vtrace_pg, shape (1, 5): the error starts at the latest wrong step, index (0, 4) expected 3.50356, got 4.24266 (5 of "
         "5 elements wrong)\nHint: These are the policy-gradient advantages with a slip: your v_next is y where y_in "
         "belongs, at every step (at the window's last one, next_values belongs). y is vs_t",
         "v_next = y_in inside the window, next_values at its last step: tl.where(t == T - 1, next_values, y_in)."),
    ("vtrace_kernel", "pg reads vs_t, not vs_{t+1}"):
        ("result 1 (pg_advantages): the error starts at the latest wrong step, index (0, 3) expected -0.117867, got 0.475595 "
         "(4 of 5 elements wrong)\nHint: Your pg reads vs at step t itself, vs_t, where vs_{t+1} belongs",
         "Read vs one step on (offs + 1) inside the window, next_values at its last step"),
    ("n_step_returns", "the flags' cumsum without its 0 in front: t + 1 .. t + n counted, one step late (a later "
                       "review's case)"):
        ("Hint: This is the n-step return with a slip: the terminations it counts are those of t + 1 .. t + n, a window "
         "one step late", "Count the flags of t .. t + n - 1, ends[t + n] - ends[t] with ends = "
                          "torch.cumsum(torch.nn.functional.pad(terminated.float(), (1, 0)), 1)"),
    ("n_step_returns", "the terminations of t - 1 .. t + n - 1 counted, ends[t + n] - ends[t - 1] (a later review's "
                       "case)"):
        ("Hint: This is the n-step return with a slip: the terminations it counts are those of t - 1 .. t + n - 1, n + 1 "
         "flags from one step early", "Count the flags of t .. t + n - 1, ends[t + n] - ends[t]"),
    ("n_step_returns", "one step too many"):
        "Hint: An ordinary step, and the later steps of its row are right: check what your code computes at that step "
        "(the terminations it counts, those of t .. t + n - 1;",
    ("returns_autograd", "term_t for term_{t-1} in the backward"):
        ("Hint: that step is an episode end. Your backward is off by one step: at step t it reads step t's own "
         "flag, term_t, where the transposed scan needs step t - 1's.",
         "In the transposed scan (forwards in time), g_t = dL/dG_t + gamma (1 - term_{t-1}) g_{t-1}: step t resets "
         "where step t - 1 terminated. Load the flag one step back (offs - 1, only where t >= 1; step 0 resets)."),
    ("reset_scan", "a combine that selects on k1, the run applied first (associative: the earliest reset wins; the "
                   "ninth review's case)"):
        ("Hint: Your combine keeps the run applied first whole when its flag k1 is set",
         "Select on k2: tl.where(k2, a2, a2 * a1) and tl.where(k2, b2, b2 + a2 * b1)."),
    ("vtrace_pg", "no bootstrap at the window's end"):
        ("Your pg there reads y_in, and at the window's last step y_in is 0",
         "At t == T - 1, v_next is next_values: tl.where(t == T - 1, next_values, y_in)."),
    ("soft_lambda_targets", "-alpha log pi_{t+1} in a, multiplying G_{t+1} (a later review's case)"):
        ("Hint: Your a_t holds the continuation's entropy term",
         "In b, the continuation's entropy term is gamma (1 - term_t) lam_t (-alpha log_probs_{t+1})"),
    ("soft_lambda_targets", "-alpha log pi_{t+1} without its lam (the ninth review's case)"):
        ("Hint: Your targets read -alpha log_probs_{t+1} at full weight: in the task it is inside lam's term",
         "In b, the continuation's entropy term is gamma (1 - term_t) lam_t (-alpha log_probs_{t+1})"),
    ("soft_lambda_targets", "no entropy on the continuation"):
        ("Hint: Your targets leave out the continuation's entropy term",
         "In b, the continuation's entropy term is gamma (1 - term_t) lam_t (-alpha log_probs_{t+1})"),
    ("soft_lambda_targets", "log pi of step t, not t+1"): "Hint: Your targets read log_probs at step t",
    ("token_gae_pairs", "OpenRLHF's, the masked tokens selected to 0 (no NaN: named by name)"):
        ("Hint: that step is a masked token (tool output or padding: as if deleted, the identity (1, 0)). At the "
         "policy tokens these are OpenRLHF's advantages (notebook 12, section 5)",
         "A masked token is the identity (a, b) = (1, 0), and V_next is the value at the next policy token"),
    ("token_gae_pairs", "masked tokens the identity, but V_next read at t + 1 (zero in a hole)"):
        ("Hint: These are verl's advantages with a slip: V_next is read at position t + 1 whatever the mask.",
         "V_next is the value at the next policy token: a reverse scan of the values with a = (~mask)"),
    ("token_gae_pairs", "V_next not shifted: each token's own value (a later review's case)"):
        ("Hint: These are verl's advantages with a slip: V_next is each policy token's own value",
         "torch.cat([scanned[..., 1:], zeros], -1)."),
    ("token_gae_pairs", "the scan of the values with its flag swapped (a later review's case)"):
        ("Hint: These are verl's advantages with a slip: the scan of the values has its flag swapped",
         "In the scan of the values, a = (~mask)."),
    ("strided_scan", "the output stored at rewards' strides (a later review's case)"):
        "Hint: Every right value is there, in the wrong place: your loads are right, your stores' addresses are not.",
    ("strided_scan", "the output an empty_like of rewards, stored as if contiguous (a later review's case)"):
        "Hint: Every right value is there, in the wrong place: your loads are right, your stores' addresses are not.",
    ("n_step_returns", "the terminations of t .. t + n counted, one flag too many (a later review's case)"):
        ("This is the n-step return with a slip: a termination at step t + n, just after the n steps, makes the sum "
         "run on", "Only a termination at steps t .. t + n - 1 ends the sum"),
    ("n_step_returns", "the terminations of t .. t + n - 2 counted, one flag short, V(s_{t+n}) read behind a "
                       "termination by a where (a cold review's case)"):
        ("Hint: This is the n-step return with a slip: the terminations it counts are those of t .. t + n - 2, a "
         "window one step short", "Count the flags of t .. t + n - 1, ends[t + n] - ends[t]"),
    ("n_step_returns", "no t + n < T test: n steps on read past the window (a later review's case)"):
        "Only steps whose n steps run past the window's end (t + n >= T) are wrong: fewer than n steps are left",
    ("vtrace_pg", "the ratio not clipped (a later review's case)"):
        ("Hint: These are the policy-gradient advantages with a slip: the ratio is not clipped",
         "The weight is min(rho_bar, exp(log_rhos)), rho_bar = P[1]"),
    ("vtrace_pg", "the ratio clipped at c_bar (a later review's case)"):
        "Hint: These are the policy-gradient advantages with a slip: the ratio is clipped at c_bar",
    ("soft_lambda_targets", "V' = min(Q1, Q2) + alpha log pi' (a later review's case)"):
        ("Hint: Your soft value V'_t adds alpha log pi(u'|s_{t+1})", "V'_t = min(Q1, Q2) - alpha * next_log_probs"),
    ("soft_lambda_targets", "V' from the larger critic (a later review's case)"):
        ("Hint: Your soft value V'_t takes the larger critic", "V'_t = min(Q1, Q2) - alpha * next_log_probs"),
    ("launch_model", "the do_bench time (ms) fitted (a later review's case)"):
        ("Hint: That is the fit with a slip: the do_bench time (ms) fitted", "Fit the GPU time, 1000 * kernel_ms"),
    ("host_bound", "the do_bench time (ms) taken for the GPU time (a later review's case)"):
        ("That is the answer with a slip: ms, the do_bench time, taken for the GPU time", "The GPU time is kernel_ms"),
    ("vtrace_pg", "(1 - term) multiplied, not selected: 0 * NaN at a terminal last step (a later review's case)"):
        "Hint: that step is a termination at the window's last step (no bootstrap). A NaN or inf where the answer is "
        "finite, at an episode end. The scan (given) selects there, so the NaN comes from what your code computes at "
        "that step: most likely",  # (no reset of the student's named: a round-71 review, an epilogue has none)
    ("n_step_returns", "no termination in t .. t + n - 1 counted: the scan form across an episode end (a later "
                       "review's case)"):
        ("Hint: Every wrong step has a termination within its n steps (t .. t + n - 1)",
         "Where a termination lies in t .. t + n - 1, G_t is the discounted sum of the rewards up to it"),
    ("awac_weights", "A * beta, not A / beta (round 57's case: the generic words then)"):
        ("Hint: These are AWAC's weights of A * beta, not A / beta", "divide by beta before the max and the exp"),
    ("awac_weights", "the max of A, not of A / beta (round 55's case: it passed)"):
        ("Hint: exp overflowed to inf: here beta = 0.25, so A / beta runs up to 120, while the max of A is 30. "
         "Subtracting the max of A from A / beta leaves exp(90), inf in float32 (above 88.7). Is your max taken of A, "
         "before the division by beta?",
         "The max pass takes the max of A / beta: divide each loaded block by beta before tl.max."),
    ("awac_weights", "the max over the first block only, the sum over all (a later review's case: it passed)"):
        ("Here the largest lie past the first 1,024 elements: does your max walk all N elements",
         "Subtract the max of A / beta before the exp"),
    ("soft_lambda_targets", "-lam alpha log pi_{t+1} without the bracket's gamma (a later review's case)"):
        ("Hint: Your continuation's entropy term lacks the gamma in front of the bracket",
         "In b, the continuation's entropy term is gamma (1 - term_t) lam_t (-alpha log_probs_{t+1})"),
    ("retrace", "the ratio read one step back, at offs - 1 (a later review's case)"):
        ("Hint: These are Retrace's targets with a wrong trace: the ratio of the step before",
         "Read it at offs, not one step back"),
    ("gae_prologue", "resets only at terminations"):
        ("Hint: Your reset is the termination alone, so the trace runs on through a truncation",
         "Return done as the reset, not term."),
    ("discounted_max", "0 as max's identity (the first carry and the padding)"):
        ("Hint: These are the discounted maxima with 0 entering after the row's last step",
         "Start the carry at float('-inf'), and load the padding lanes as (g, c) = (1, -inf)."),
    ("discounted_max", "c1 not discounted by g2 in the combine (a later review's case)"):
        ("Hint: Your combine leaves c1 undiscounted", "In the combine, c = max(c2, g2 * c1)."),
    ("discounted_max", "the combine's maps in the wrong order"):
        ("Hint: Your combine applies the two maps in the wrong order: its c is max(c1, g1 * c2)",
         "pull g2 inside the max: c = max(c2, g2 * c1)"),
    ("q_lambda", "no cut at the window's end"):
        ("Hint: These are Q(lambda)'s targets with the trace not cut at the window's last step",
         "lambda_t = 0 where t == T - 1: tl.where(t < T - 1, ..., 0.0)."),
    ("gae_prologue", "returns 00c's triple (a, b, reset): no valid, no keep"):
        "gae_prologue, no episode ends, shape (3, 90): _gae_prologue_returns_three returned 3 values (return "
        "gamma * lam, delta, done), expected 5: a package prologue returns the 5-tuple (a, b, reset, valid, keep): "
        "the step's pair (a, b), reset (where the trace is cut), valid (false on padding: episode.step's) and keep, "
        "a tuple of what the epilogue reads (it stores the returns y + keep[0])",
}


W_SAYS_BY_THE_INTERPRETER = {("reset_scan", what) for name, what in W_SAYS if what.startswith("a combine that selects on k1")} \
    | {("discounted_max", "the combine's maps in the wrong order")} \
    | {("tiled_scan", "the scan along axis 0, the tile's rows (rounds 51 and 52's case)")}  # (the scan's axis: seen there)


def _told_what_is_wrong(name, what, e):
    """A W_SAYS entry's message is in the failure; where the entry is a pair, its second part is the fix,
    held back from the message and shown by exercises.fix (the reviews: a fix in the message spoils the
    notebook's hints). Checked by test_wrong_answers_fail_with_a_message, on its one run of each."""
    if not exercises.INTERPRET and (name, what) in W_SAYS_BY_THE_INTERPRETER:
        return  # (the student's combine is tried on two maps by the interpreter: compiled, only in the scan)
    said, fixed = (W_SAYS[name, what], None) if isinstance(W_SAYS[name, what], str) else W_SAYS[name, what]
    assert said in str(e.value), (what, str(e.value))
    if fixed:
        assert fixed not in str(e.value) and fixed in e.value.fix == exercises.fix(name), (what, e.value.fix)
        assert str(e.value).endswith(f"print(exercises.fix({name!r})) shows it.)"), what


def test_every_told_wrong_answer_is_a_wrong_answer():
    for name, what in W_SAYS:
        assert [w for w, _ in wrong_answers(name)].count(what) == 1, (name, what)


def test_a_backward_with_one_gradient_too_few_is_told_what_autograd_wants():
    """A review: returning dL/drewards alone from a backward of three inputs gave autograd's error
    with the operators' reminder (&, tl.where), which is not about autograd."""
    fwd = solution("returns_autograd").__globals__["Returns"].forward
    transposed = solution("returns_autograd").__globals__["_transposed_prologue"]

    class OneGradient(torch.autograd.Function):
        forward = staticmethod(fwd)

        @staticmethod
        def backward(ctx, grad):
            return exercises.scan_hook(transposed, (grad.contiguous(), ctx.saved_tensors[0]), (ctx.gamma,),
                                       reverse=False)

    with pytest.raises(RuntimeError, match=r"incorrect number of gradients") as e:
        exercises.check("returns_autograd", lambda r, d, g: OneGradient.apply(r, d, g))
    assert "A backward returns one gradient per input of forward" in str(e.value)
    assert "tl.where" not in str(e.value)


def test_an_input_cut_from_the_graph_is_told_as_autograd_s_error_not_triton_s():
    """A review: a Function applied to a detached copy of the rewards gave autograd's "not used in
    the graph" with the operators' reminder (&, tl.where), which is not about autograd."""
    returns = solution("returns_autograd").__globals__["Returns"]
    with pytest.raises(RuntimeError, match=r"not have been used in the graph") as e:
        exercises.check("returns_autograd",
                        lambda r, d, g: returns.apply(r.detach().clone().requires_grad_(), d, g))
    assert "An autograd error, not a Triton one" in str(e.value) and "not a detached copy" in str(e.value)
    assert "tl.where" not in str(e.value)


def test_a_fix_is_held_back_until_asked_for_and_forgotten_when_right():
    (fn,) = [f for w, f in wrong_answers("awr_weights") if w.startswith("exp(A * beta)")]
    with pytest.raises(AssertionError) as e:
        exercises.check("awr_weights", fn)
    assert "exp(A * beta), the advantage times the temperature." in str(e.value)
    assert "\x01" not in str(e.value) and "divides" not in str(e.value)
    assert exercises.fix("awr_weights") == "The temperature divides the advantage, exp(A / beta)."
    assert exercises.check("awr_weights", solution("awr_weights")) is None
    assert exercises.fix("awr_weights") == "awr_weights: no fix to show: its last check passed."
    with pytest.raises(AssertionError):
        exercises.check("awr_weights", lambda X, P, offs, m: None)  # not a hook: refused, no fix to hold back
    assert exercises.fix("awr_weights").startswith("awr_weights: no fix beyond the message above")
    with pytest.raises(ValueError, match="unknown exercise"):
        exercises.fix("awr")


def test_a_short_return_compiled_by_triton_3_6_is_counted():
    """Compiled, Triton 3.6 fails the kernel's 5-way unpacking of a 3-tuple as an IndexError at that
    line (no "values to unpack"): the verdict is still the count, as under the interpreter."""
    from triton.compiler.errors import CompilationError
    src = "def k(X):\n    a, b, reset, valid, keep = PROLOGUE(X)\n"
    at = CompilationError(src, ast.parse(src).body[0].body[0], "IndexError('list index out of range')")
    ex = exercises._get("gae_prologue")
    assert exercises._returned_count(ex, at, _gae_prologue_returns_three) == W_SAYS[
        "gae_prologue", "returns 00c's triple (a, b, reset): no valid, no keep"].split(": ", 1)[1]
    assert exercises._returned_count(ex, at, lambda *a: a).startswith("<lambda> returned fewer than 5 values")
    elsewhere = CompilationError(src, ast.parse("x = y[9]").body[0], "IndexError('list index out of range')")
    assert exercises._returned_count(ex, elsewhere, _gae_prologue_returns_three) is None


def test_the_package_s_fast_launches_are_watched():
    """A planned launch of the package's that skips Triton (_triton.Launch's checked compiled
    kernel) takes Triton's path while the checker records launches, so it is seen."""
    seen = []
    kernel = type("K", (), {"__getitem__": lambda self, grid: lambda *a, **kw: seen.append(grid)})()
    launch = rl_triton.Launch(kernel, (2,), (), 1, ())
    launch.compiled = object()  # as after a first call that agreed
    before = rl_triton._hooks_installed
    with exercises._recording_launches():
        launch(1.0)
    assert seen == [(2, 1, 1)] and rl_triton._hooks_installed is before


@triton.jit
def _awac_variant(A, W, beta, n, BLOCK: tl.constexpr, NO_MAX: tl.constexpr, PAD_ZERO: tl.constexpr,
                  NO_N: tl.constexpr, ONE_BLOCK: tl.constexpr, MAX_FROM_0: tl.constexpr,
                  MAX_OF_ONE_BLOCK: tl.constexpr, PAD_ZERO_IN_MAX: tl.constexpr = False,
                  MAX_OF_A: tl.constexpr = False):
    offs = tl.arange(0, BLOCK)
    pad = 0.0 if PAD_ZERO else float("-inf")
    pad_max = 0.0 if PAD_ZERO_IN_MAX else pad
    stop = BLOCK if ONE_BLOCK else n
    top = 0.0 if MAX_FROM_0 else float("-inf")
    for start in range(0, BLOCK if MAX_OF_ONE_BLOCK else stop, BLOCK):
        x = tl.load(A + start + offs, mask=start + offs < n, other=pad_max)
        top = tl.maximum(top, tl.max(x if MAX_OF_A else x / beta, 0))
    if NO_MAX:
        top = 0.0
    total = 0.0
    for start in range(0, stop, BLOCK):
        x = tl.load(A + start + offs, mask=start + offs < n, other=pad) / beta
        total += tl.sum(tl.exp(x - top), 0)
    scale = 1.0 if NO_N else n * 1.0
    for start in range(0, n, BLOCK):
        x = tl.load(A + start + offs, mask=start + offs < n, other=pad) / beta
        tl.store(W + start + offs, scale * tl.exp(x - top) / total, mask=start + offs < n)


@triton.jit
def _awac_per_block_kernel(A, W, beta, n, BLOCK: tl.constexpr, BY_N: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(A + offs, mask=m, other=float("-inf")) / beta
    e = tl.exp(x - tl.max(x, 0))
    count = n * 1.0 if BY_N else tl.sum(m.to(tl.float32), 0)
    tl.store(W + offs, count * e / tl.sum(e, 0), mask=m)


def _awac_per_block(advantages, beta, by_n=False):
    """awac_weights with one program per block, each block normalised on its own, times its count
    or times N (two reviews' cases)."""
    w, n = torch.empty_like(advantages), advantages.numel()
    _awac_per_block_kernel[(triton.cdiv(n, 1024),)](advantages, w, beta, n, BLOCK=1024, BY_N=by_n)
    return w


def _awac_with(**mistake):
    """awac_weights with one mistake switched on, as a student writes it (one program, three passes)."""
    flags = {**dict(NO_MAX=False, PAD_ZERO=False, NO_N=False, ONE_BLOCK=False, MAX_FROM_0=False,
                    MAX_OF_ONE_BLOCK=False), **mistake}

    def awac_weights(advantages, beta):
        w = torch.empty_like(advantages)
        _awac_variant[(1,)](advantages, w, beta, advantages.numel(), BLOCK=1024, **flags)
        return w
    return awac_weights


def _cleanrl_with(terminated=lambda d, nd: torch.cat([d[1:], nd[None]]), bootstrap=True,
                  returns=lambda a, v: a + v, swapped=False):
    """cleanrl_advantages with one slip, written as a student would: rl.gae with CleanRL's flags."""
    def cleanrl_advantages(rewards, values, dones, next_value, next_done, gamma, gae_lambda):
        gamma, gae_lambda = (gae_lambda, gamma) if swapped else (gamma, gae_lambda)
        out = rl.gae(rewards, values, gamma=gamma, lambda_=gae_lambda, terminated=terminated(dones, next_done).bool(),
                     bootstrap_value=next_value.reshape(-1) if bootstrap else None, time_dim=0)
        return out.advantages, returns(out.advantages, values)
    return cleanrl_advantages


def _lean_with(ended_after, decay=lambda gamma, lam: gamma * lam, decay_ended_after=None):
    """lean_gae_loop with one slip in what it hoists, written as a student would (``decay_ended_after``: the
    decay's own flag, where it differs from delta's)."""
    def lean_gae_loop(rewards, values, dones, next_value, next_done, gamma, gae_lambda):
        goes_on = ended_after(dones, next_done) == 0
        next_values = torch.cat([values[1:], next_value.reshape(1, -1)])
        delta = rewards + torch.where(goes_on, gamma * next_values, 0.0) - values
        decays = goes_on if decay_ended_after is None else decay_ended_after(dones, next_done) == 0
        decay_t = torch.where(decays, decay(gamma, gae_lambda), 0.0)
        advantages, last = torch.zeros_like(rewards), torch.zeros_like(rewards[0])
        for t in reversed(range(rewards.shape[0])):
            last = delta[t] + decay_t[t] * last
            advantages[t] = last
        return advantages, advantages + values
    return lean_gae_loop


def _cleanrl_verbatim():
    """CleanRL ppo.py's loop as it is, pasted by a student (the package's copy, cleanrl.loop, is refused):
    right values, 15 ops per step."""
    from rltriton_lite.integrations import cleanrl
    pasted = {"torch": torch}
    exec(compile(textwrap.dedent(inspect.getsource(cleanrl.loop)), "<pasted>", "exec"), pasted)
    return pasted["loop"]


@triton.jit
def _hooked_gae_flags_of_row_0(X, P, offs, t, m, T):  # exercises._hooked_gae, the flags' load without row * T
    r = tl.load(X[0] + offs, mask=m, other=0.0)
    v = tl.load(X[1] + offs, mask=m, other=0.0)
    nv = tl.load(X[2] + offs, mask=m, other=0.0)
    done = tl.load(X[3] + t, mask=m, other=0) != 0
    return _reset_where_zero(tl.where(m, tl.where(done, 0.0, P[0] * P[1]), 2.0), tl.where(m, r + tl.where(done, 0.0, P[0] * nv) - v, 100.0))


def _gae_kernel_flags_of_row_0(rewards, values, next_values, terminated, gamma, lam, chunk):
    """gae_kernel whose load of the flags lacks the row's offset (a review's case): row 0's flags in every row."""
    return _hooked_scan_with()(_hooked_gae_flags_of_row_0, (rewards, values, next_values, terminated), (gamma, lam),
                               chunk)


def _gae_kernel_without_reset(rewards, values, next_values, terminated, gamma, lam, chunk):
    """gae_kernel whose triple never resets (a review's case): delta selects at a termination, the trace runs on."""
    nv = torch.where(terminated, 0.0, next_values)  # (delta's select, written before the launch)
    return solution("gae_kernel")(rewards, values, nv, torch.zeros_like(terminated), gamma, lam, chunk)


def _gae_kernel_storing_a(rewards, values, next_values, terminated, gamma, lam, chunk):
    """gae_kernel that stores the scan's A_t instead of y_t (a review's case): the hooked scan with GAE's pairs."""
    return _hooked_scan_with(STORE_A=True)(exercises._hooked_gae, (rewards, values, next_values, terminated),
                                           (gamma, lam), chunk)


def _launch_model_with(us_per_ms=1e3, wall=False, origin=False, per_gb=1e9, slope=False, swapped=False,
                       clock="kernel_ms"):
    """launch_model with one of its usual slips, written as a student would (no checker helper)."""
    def launch_model(rows, algorithm, pass_):
        mine = [r for r in rows if (r["impl"], r["dtype"], r["algorithm"], r["pass"])
                == ("rltriton_lite", "float32", algorithm, pass_)]
        x = np.array([r["bytes"] for r in mine], dtype=float)
        y = np.array([r["full_call_us"] if wall else us_per_ms * r[clock] for r in mine])
        m, t0 = ((x @ y) / (x @ x), 0.0) if origin else np.polyfit(y, x, 1) if swapped else np.polyfit(x, y, 1)
        return t0, m if slope else 1e6 / m / per_gb
    return launch_model


def _host_bound_with(**slip):
    """host_bound with one of its usual slips, written as a student would (no checker helper)."""
    def host_bound(rows, algorithm, pass_):
        mine = [r for r in rows if r["algorithm"] == algorithm and r["pass"] == pass_ and r["kernel_ms"] is not None
                and (r["impl"] == "rltriton_lite" or slip.get("ours", 1) is None) and r["dtype"] == "float32"]
        best = 0
        for r in sorted(mine, key=lambda r: r["B"] * r["T"]):
            gpu_us = slip.get("us_per_ms", 1e3) * r[slip.get("clock", "kernel_ms")]
            x = slip.get("factor", 2)
            if r["full_call_us"] > x * gpu_us or (slip.get("at_least") and r["full_call_us"] >= x * gpu_us):
                best = r["B"] * r["T"]
                if slip.get("smallest"):
                    break
            elif slip.get("first_run") and best:
                break
        return best
    return host_bound


def _host_bound_most_steps(rows, algorithm, pass_):
    """host_bound that picks, among the host-bound rows, the one with the most steps T (a cold review's case)."""
    mine = [r for r in rows if (r["algorithm"], r["pass"], r["impl"], r["dtype"]) == (algorithm, pass_, "rltriton_lite",
                                                                                     "float32")
            and r["kernel_ms"] is not None and r["full_call_us"] > 2 * 1e3 * r["kernel_ms"]]
    best = max(mine, key=lambda r: r["T"], default=None)
    return 0 if best is None else best["B"] * best["T"]


def _launch_model_two_points(rows, algorithm, pass_):
    """launch_model through its first and last points (by bytes), not least squares over all of them."""
    mine = sorted((r for r in rows if (r["impl"], r["dtype"], r["algorithm"], r["pass"])
                   == ("rltriton_lite", "float32", algorithm, pass_)), key=lambda r: r["bytes"])
    (x0, y0), (x1, y1) = [(r["bytes"], 1e3 * r["kernel_ms"]) for r in (mine[0], mine[-1])]
    slope = (y1 - y0) / (x1 - x0)
    return y0 - slope * x0, 1e6 / slope / 1e9


def _bellman(nu, P, R, gamma):
    """V^nu for a policy nu (rows summing to 1, or less): exercises._value_under's, which a wrong answer may
    not call (the checker's own are refused while a student's function runs)."""
    return np.linalg.solve(np.eye(len(R)) - gamma * np.einsum("sa,sat->st", nu, P), (nu * R).sum(1))


def _fixed_point_ratios(P, R, pi, mu, gamma, rho_bar):
    w = np.minimum(rho_bar, pi / mu)
    return _bellman(w / w.sum(1, keepdims=True), P, R, gamma)


def _fixed_point_one_state(P, R, pi, mu, gamma, rho_bar):
    """Section 5's E_nu[r] / (1 - gamma), with the mean over states of pi_rho_bar's reward."""
    w = np.minimum(rho_bar * mu, pi)
    nu = w / w.sum(1, keepdims=True)
    return np.full(len(R), (nu * R).sum(1).mean() / (1 - gamma))


def _token_plain_gae(r, v, m, gamma, lam):
    return torch.full_like(r, gamma * lam), r + gamma * shift_left(v) - v


def _token_openrlhf(r, v, m, gamma, lam):
    r, v = r * m, v * m
    return torch.full_like(r, gamma * lam), r + gamma * shift_left(v) - v


def _token_openrlhf_selected(r, v, m, gamma, lam):
    r, v = torch.where(m, r, 0.0), torch.where(m, v, 0.0)
    return torch.full_like(r, gamma * lam), r + gamma * shift_left(v) - v


def _token_b_multiplied(r, v, m, gamma, lam):
    a, b = solution("token_gae_pairs")(r, v, m, gamma, lam)
    return a, torch.where(m, b, 0.0 * r)  # b = delta * mask: 0 * NaN where a masked token holds NaN


def _token_values_not_zeroed(rewards, values, mask, gamma, lam):
    """The scan of the values over the values as they are: a masked token's value (a = 1 there) is added in."""
    v_from_here = rl.linear_scan((~mask).to(values.dtype), values)
    v_next = torch.cat([v_from_here[..., 1:], torch.zeros_like(v_from_here[..., :1])], -1)
    a = torch.where(mask, gamma * lam, 1.0).to(values.dtype)
    return a, torch.where(mask, rewards + gamma * v_next - values, 0.0)


def _token_decay_gamma(r, v, m, gamma, lam):
    a, b = solution("token_gae_pairs")(r, v, m, gamma, lam)
    return torch.where(m, torch.full_like(a, gamma), a), b  # the trace decays by gamma alone


def _token_reset_at_holes(r, v, m, gamma, lam):
    a, b = solution("token_gae_pairs")(r, v, m, gamma, lam)
    return torch.where(m, a, 0.0), b


def _token_value_scan_with(unshifted=False, swapped=False):
    """token_gae_pairs' solution with a slip in its scan of the values: V_next not shifted, or the
    scan's flag swapped (a review's cases)."""
    def token_gae_pairs(rewards, values, mask, gamma, lam):
        v = torch.where(mask, values, 0.0)
        v_from_here = rl.linear_scan((mask if swapped else ~mask).to(values.dtype), v)
        v_next = v_from_here if unshifted else torch.cat([v_from_here[..., 1:], torch.zeros_like(v[..., :1])], -1)
        return torch.where(mask, gamma * lam, 1.0), torch.where(mask, rewards + gamma * v_next - values, 0.0)
    return token_gae_pairs


def _token_next_by_position(r, v, m, gamma, lam):
    delta = r + gamma * shift_left(torch.where(m, v, 0.0)) - v
    return torch.where(m, gamma * lam, 1.0), torch.where(m, delta, 0.0)


def _carries_from_before(A, B, reset, initial):
    carries, c = np.empty_like(B), np.asarray(initial, dtype=float)
    for s in range(B.shape[1]):
        carries[:, s] = c
        c = np.where(reset[:, s], B[:, s], B[:, s] + A[:, s] * c)
    return carries


def _segment_map_with(next_as=None, a_steps=0, a_gamma=False, reset_at=None, multiply=False, carry_as_value=False,
                      no_cut=False, multiply_b=False):
    """gae_segment_map with one slip, as a student writes it."""
    def gae_segment_map(rewards, values, terminated, next_first_value, gamma, lam):
        rows, n = rewards.shape
        after = {"zero": np.zeros(rows), "own": values[:, -1]}.get(next_as, next_first_value)
        v_next = np.concatenate([values[:, 1:], after[:, None]], axis=1)
        if multiply:
            delta = rewards + gamma * v_next * (1 - terminated) - values
        else:
            delta = rewards + np.where(terminated, 0.0, gamma * v_next) - values
        B = after.copy() if carry_as_value else np.zeros(rows)
        for t in reversed(range(n)):
            if multiply_b:
                B = delta[:, t] + gamma * lam * (1 - terminated[:, t]) * B
            else:
                B = delta[:, t] + gamma * lam * B if no_cut else np.where(terminated[:, t], delta[:, t],
                                                                          delta[:, t] + gamma * lam * B)
        A = np.full(rows, (gamma if a_gamma else gamma * lam) ** (n + a_steps))
        reset = terminated.any(axis=1) if reset_at is None else terminated[:, reset_at]
        return A, B, reset
    return gae_segment_map


def _carries_multiplied(A, B, reset, initial):
    carries, c = np.empty_like(B), np.asarray(initial, dtype=float)
    for s in reversed(range(B.shape[1])):
        carries[:, s] = c
        c = B[:, s] + (~reset[:, s]) * A[:, s] * c
    return carries


def _carries_own_map(A, B, reset, initial):
    carries, c = np.empty_like(B), np.asarray(initial, dtype=float)
    for s in reversed(range(B.shape[1])):
        c = np.where(reset[:, s], B[:, s], B[:, s] + A[:, s] * c)
        carries[:, s] = c
    return carries


def _carries_next_reset(A, B, reset, initial):  # segment s selects on reset[:, s + 1], the next segment's flag
    carries, c = np.empty_like(B), np.asarray(initial, dtype=float)
    for s in reversed(range(B.shape[1])):
        carries[:, s] = c
        nxt = reset[:, s + 1] if s + 1 < B.shape[1] else np.zeros(B.shape[0], dtype=bool)
        c = np.where(nxt, B[:, s], B[:, s] + A[:, s] * c)
    return carries


def _carries_next_reset_at(last):  # reset[:, s + 1] where the last segment reads reset[:, last(S)] (a round-50 case)
    def carries_of(A, B, reset, initial):
        carries, c, S = np.empty_like(B), np.asarray(initial, dtype=float), B.shape[1]
        for s in reversed(range(S)):
            carries[:, s] = c
            c = np.where(reset[:, s + 1 if s + 1 < S else last(S)], B[:, s], B[:, s] + A[:, s] * c)
        return carries
    return carries_of


def _carries_without_initial(A, B, reset, initial):
    return _carries_reverse(A, B, reset, np.zeros_like(initial))


def _carries_without_resets(A, B, reset, initial):
    return _carries_reverse(A, B, np.zeros_like(reset), initial)


def _carries_reverse(A, B, reset, initial):  # the right walk, which the two slips above feed wrong inputs
    carries, c = np.empty_like(B), np.asarray(initial, dtype=float)
    for s in reversed(range(B.shape[1])):
        carries[:, s] = c
        c = np.where(reset[:, s], B[:, s], B[:, s] + A[:, s] * c)
    return carries


def _grad_carries_with(multiply=False, from_last=False, own=False, reads_next=False, shift=False, no_sigma=False,
                       resets=True, next_reset=False):
    """segment_grad_carries with one slip, as a student writes it."""
    def segment_grad_carries(A, sigma, reset):
        x, R = np.zeros_like(sigma), sigma.shape[1]
        flags = reset if resets else np.zeros_like(reset)
        if from_last:  # the forward's carries: from the last rank back
            c = np.zeros(len(sigma))
            for r in reversed(range(1, R)):
                c = np.where(flags[:, r], sigma[:, r], sigma[:, r] + A[:, r] * c)
                x[:, r - 1] = c
            return x
        c = np.zeros(len(sigma))  # what entered rank r (own: its running value, stored one rank off)
        for r in range(R - 1):
            k = r + 1 if shift else r
            f = flags[:, r + 1] if next_reset else flags[:, k]
            carry = x[:, r + 1] if reads_next else c
            if multiply:
                c = sigma[:, k] + (1 - flags[:, k]) * A[:, k] * carry
            else:
                c = np.where(f, sigma[:, k], (0.0 if no_sigma else sigma[:, k]) + A[:, k] * carry)
            x[:, r if own else r + 1] = c
        return x
    return segment_grad_carries


# The Triton exercises' wrong answers: hooks, as a student writes them
@triton.jit
def _transposed_no_shift(X, P, offs, t, m, T):
    return _reset_where_zero(tl.load(X[0] + offs, mask=m, other=0.0), tl.load(X[1] + offs, mask=m, other=0.0))


@triton.jit
def _transposed_wrong_shift(X, P, offs, t, m, T):
    return _reset_where_zero(tl.load(X[0] + offs + 1, mask=m & (t + 1 < T), other=0.0), tl.load(X[1] + offs, mask=m, other=0.0))


@triton.jit
def _q_lambda(X, P, offs, t, m, T, GREEDY_CUT: tl.constexpr, WINDOW_CUT: tl.constexpr, BOOTSTRAP_MAX: tl.constexpr,
              TIES_GREEDY: tl.constexpr, STRIDE_A: tl.constexpr, SELECT: tl.constexpr):
    gamma, lam, A = P[0], P[1], P[2]
    stride = A
    if not STRIDE_A:  # action a of step offs read at offs + a
        stride = 1
    r = tl.load(X[0] + offs, mask=m, other=0.0)
    next_action = tl.load(X[2] + offs, mask=m, other=0)
    term = tl.load(X[3] + offs, mask=m, other=0) != 0
    max_q = tl.load(X[1] + offs * stride, mask=m, other=0.0)
    q_taken = max_q
    argmax = next_action * 0
    for a in range(1, A):
        q_a = tl.load(X[1] + offs * stride + a, mask=m, other=0.0)
        argmax = tl.where(q_a > max_q, a, argmax)  # the first action of the max, as np.argmax
        max_q = tl.maximum(max_q, q_a)
        q_taken = tl.where(next_action == a, q_a, q_taken)
    greedy = q_taken == max_q
    if not TIES_GREEDY:
        greedy = next_action == argmax
    lam_t = tl.where(t >= 0, lam, 0.0)
    if GREEDY_CUT:
        lam_t = tl.where(greedy, lam_t, 0.0)
    if WINDOW_CUT:
        lam_t = tl.where(t < T - 1, lam_t, 0.0)
    q_next = max_q
    if not BOOTSTRAP_MAX:
        q_next = q_taken
    if SELECT:
        return _reset_where_zero(tl.where(term, 0.0, gamma * lam_t), r + tl.where(term, 0.0, gamma * (1.0 - lam_t) * q_next))
    boot = tl.where(term, 0.0, gamma)
    return _reset_where_zero(boot * lam_t, r + boot * (1.0 - lam_t) * q_next)


@triton.jit
def _q_lambda_never_cut(X, P, offs, t, m, T):  # TD(lambda) on the max: the trace goes on past non-greedy actions
    return _q_lambda(X, P, offs, t, m, T, False, True, True, True, True, True)


@triton.jit
def _q_lambda_no_window_cut(X, P, offs, t, m, T):
    return _q_lambda(X, P, offs, t, m, T, True, False, True, True, True, True)


@triton.jit
def _q_lambda_sarsa(X, P, offs, t, m, T):  # bootstraps from Q(s_{t+1}, a_{t+1}): SARSA(lambda)'s target
    return _q_lambda(X, P, offs, t, m, T, True, True, False, True, True, True)


@triton.jit
def _q_lambda_argmax_ties(X, P, offs, t, m, T):  # greedy only if a_{t+1} is the first argmax: a tie cuts
    return _q_lambda(X, P, offs, t, m, T, True, True, True, False, True, True)


@triton.jit
def _q_lambda_no_stride(X, P, offs, t, m, T):  # action a of step offs at offs + a: the stride A forgotten
    return _q_lambda(X, P, offs, t, m, T, True, True, True, True, False, True)


def _gae_pairs_multiplied(rewards, values, next_values, terminated, truncated, gamma, lam):
    # the course's first bug: gamma * V' * (1 - term) reads the NaN behind a termination (0 * NaN = NaN)
    delta = rewards + gamma * next_values * (~terminated).to(rewards.dtype) - values
    a = gamma * lam * (~(terminated | truncated)).to(rewards.dtype)
    a[..., -1] = 0.0  # (the window's last step resets: this answer's one slip is in b)
    return a, delta


def _gae_pairs_open_end(rewards, values, next_values, terminated, truncated, gamma, lam):
    # every episode end resets, the window's last step does not: the scan's y_T comes in there
    delta = rewards + torch.where(terminated, 0.0, gamma * next_values) - values
    return torch.where(terminated | truncated, 0.0, gamma * lam).to(rewards.dtype), delta


@triton.jit
def _q_lambda_loads(X, offs, m, A):  # (r, term, max_q, q_taken): the right loads of the two prologues below
    r = tl.load(X[0] + offs, mask=m, other=0.0)
    next_action = tl.load(X[2] + offs, mask=m, other=0)
    term = tl.load(X[3] + offs, mask=m, other=0) != 0
    max_q = tl.load(X[1] + offs * A, mask=m, other=0.0)
    q_taken = max_q
    for a in range(1, A):
        q_a = tl.load(X[1] + offs * A + a, mask=m, other=0.0)
        max_q = tl.maximum(max_q, q_a)
        q_taken = tl.where(next_action == a, q_a, q_taken)
    return r, term, max_q, q_taken


@triton.jit
def _q_lambda_no_term_reset(X, P, offs, t, m, T):  # b selects the termination away, a does not cut the trace there
    gamma, lam, A = P[0], P[1], P[2]
    r, term, max_q, q_taken = _q_lambda_loads(X, offs, m, A)
    lam_t = tl.where((q_taken == max_q) & (t < T - 1), lam, 0.0)
    return _reset_where_zero(gamma * lam_t, r + tl.where(term, 0.0, gamma * (1.0 - lam_t) * max_q))


@triton.jit
def _q_lambda_no_window_reset(X, P, offs, t, m, T):  # lam_t = 0 in b at the window's end, the reset left out there
    gamma, lam, A = P[0], P[1], P[2]
    r, term, max_q, q_taken = _q_lambda_loads(X, offs, m, A)
    greedy = q_taken == max_q
    lam_t = tl.where(greedy & (t < T - 1), lam, 0.0)
    return gamma * lam, r + tl.where(term, 0.0, gamma * (1.0 - lam_t) * max_q), term | ~greedy


@triton.jit
def _q_lambda_cut_in_b_only(X, P, offs, t, m, T):  # lam_t = 0 in b at a non-greedy action, the reset left out there
    gamma, lam, A = P[0], P[1], P[2]
    r, term, max_q, q_taken = _q_lambda_loads(X, offs, m, A)
    lam_t = tl.where((q_taken == max_q) & (t < T - 1), lam, 0.0)
    return gamma * lam, r + tl.where(term, 0.0, gamma * (1.0 - lam_t) * max_q), term | (t == T - 1)


@triton.jit
def _q_lambda_multiplied(X, P, offs, t, m, T):  # the worked prologue's boot * ...: 0 * NaN in b at a termination
    return _q_lambda(X, P, offs, t, m, T, True, True, True, True, True, False)


@triton.jit
def _retrace(X, P, offs, t, m, T, TRUNCATE: tl.constexpr, EXPECTATION: tl.constexpr):
    r = tl.load(X[0] + offs, mask=m, other=0.0)
    ratio = tl.exp(tl.load(X[3] + offs, mask=m, other=0.0))
    if TRUNCATE:
        ratio = tl.minimum(ratio, 1.0)
    c = tl.where(t < T - 1, P[1] * ratio, 0.0)
    boot = tl.where(tl.load(X[4] + offs, mask=m, other=0) != 0, 0.0, P[0])
    q = tl.load(X[2] + offs, mask=m, other=0.0)
    return _reset_where_zero(boot * c, r + boot * (tl.load(X[EXPECTATION] + offs, mask=m, other=0.0) - c * q))


@triton.jit
def _retrace_previous_ratio(X, P, offs, t, m, T):  # next_log_ratio read at offs - 1 (a later review's case)
    r = tl.load(X[0] + offs, mask=m, other=0.0)
    term = tl.load(X[4] + offs, mask=m, other=0) != 0
    ratio = tl.exp(tl.load(X[3] + offs - 1, mask=m & (t > 0), other=0.0))
    c = tl.where(t < T - 1, P[1] * tl.minimum(ratio, 1.0), 0.0)
    boot = tl.where(term, 0.0, P[0])
    eq = tl.load(X[1] + offs, mask=m, other=0.0)
    q = tl.load(X[2] + offs, mask=m, other=0.0)
    return _reset_where_zero(boot * c, r + tl.where(term, 0.0, P[0] * (eq - c * q)))


@triton.jit
def _retrace_no_gamma_in_a(X, P, offs, t, m, T):  # a_t = c_{t+1}: G_{t+1} undiscounted (a review's case)
    r = tl.load(X[0] + offs, mask=m, other=0.0)
    term = tl.load(X[4] + offs, mask=m, other=0) != 0
    c = tl.where(t < T - 1, P[1] * tl.minimum(tl.exp(tl.load(X[3] + offs, mask=m, other=0.0)), 1.0), 0.0)
    eq = tl.load(X[1] + offs, mask=m, other=0.0)
    q = tl.load(X[2] + offs, mask=m, other=0.0)
    return _reset_where_zero(tl.where(term, 0.0, c), r + tl.where(term, 0.0, P[0] * (eq - c * q)))


@triton.jit
def _retrace_no_window_reset(X, P, offs, t, m, T):  # c = 0 at the window's end in b alone: a = gamma c lets y_T in
    r = tl.load(X[0] + offs, mask=m, other=0.0)
    term = tl.load(X[4] + offs, mask=m, other=0) != 0
    c = P[1] * tl.minimum(tl.exp(tl.load(X[3] + offs, mask=m, other=0.0)), 1.0)
    eq = tl.load(X[1] + offs, mask=m, other=0.0)
    q = tl.load(X[2] + offs, mask=m, other=0.0)
    return P[0] * c, r + tl.where(term, 0.0, P[0] * (eq - tl.where(t < T - 1, c * q, 0.0))), term


@triton.jit
def _retrace_untruncated(X, P, offs, t, m, T):
    return _retrace(X, P, offs, t, m, T, False, 1)


@triton.jit
def _retrace_taken_q(X, P, offs, t, m, T):
    return _retrace(X, P, offs, t, m, T, True, 2)


@triton.jit
def _pg(X, P, offs, t, m, T, y, y_in, NEXT: tl.constexpr, WINDOW: tl.constexpr, CLIP: tl.constexpr = 1,
        TIMES: tl.constexpr = False):
    rho = tl.exp(tl.load(X[0] + offs, mask=m, other=0.0))
    v = tl.load(X[2] + offs, mask=m, other=0.0)
    v_next = y_in if NEXT else y
    if WINDOW:
        v_next = tl.where(t == T - 1, tl.load(X[3] + offs, mask=m, other=0.0), v_next)
    term = tl.load(X[4] + offs, mask=m, other=0) != 0
    if TIMES:  # (1 - term) as a factor: 0 * NaN behind a termination at the window's last step
        g = P[0] * (1.0 - term.to(tl.float32))
    else:
        g = tl.where(term, 0.0, P[0])
    if CLIP != 0:  # P[1] is rho_bar, P[2] c_bar; CLIP 0: no clip (a review's slips)
        rho = tl.minimum(rho, P[CLIP])
    return rho * (tl.load(X[1] + offs, mask=m, other=0.0) + g * v_next - v)


@triton.jit
def _pg_unclipped(X, P, offs, t, m, T, y, y_in):
    return _pg(X, P, offs, t, m, T, y, y_in, True, True, 0)


@triton.jit
def _pg_clipped_at_c_bar(X, P, offs, t, m, T, y, y_in):
    return _pg(X, P, offs, t, m, T, y, y_in, True, True, 2)


@triton.jit
def _pg_times_not_terminated(X, P, offs, t, m, T, y, y_in):
    return _pg(X, P, offs, t, m, T, y, y_in, True, True, 1, True)


@triton.jit
def _pg_same_step(X, P, offs, t, m, T, y, y_in):
    return _pg(X, P, offs, t, m, T, y, y_in, False, True)


@triton.jit
def _pg_y_everywhere(X, P, offs, t, m, T, y, y_in):  # y (vs_t) for v_next, the window's last step included
    return _pg(X, P, offs, t, m, T, y, y_in, False, False)


@triton.jit
def _pg_no_window_end(X, P, offs, t, m, T, y, y_in):
    return _pg(X, P, offs, t, m, T, y, y_in, True, False)


@triton.jit
def _pg_vs_minus_v(X, P, offs, t, m, T, y, y_in):  # rho (vs_t - V_t): section 4's on-policy identity
    rho = tl.minimum(tl.exp(tl.load(X[0] + offs, mask=m, other=0.0)), P[1])
    return rho * (y - tl.load(X[2] + offs, mask=m, other=0.0))


@triton.jit
def _pg_y_minus_v(X, P, offs, t, m, T, y, y_in):  # vs_t - V_t: the advantage only where c_t = rho_t
    return y - tl.load(X[2] + offs, mask=m, other=0.0)


@triton.jit
def _pg_negated(X, P, offs, t, m, T, y, y_in):
    return -_pg(X, P, offs, t, m, T, y, y_in, True, True)


def test_an_epilogue_wrong_everywhere_is_told_the_formula():
    """vtrace_pg's epilogue maps the scan's values: a wrong formula is wrong at every step, and
    the hint says so rather than naming the window's last step, where a reverse scan's error would
    start (and spread from)."""
    msg = _failure("vtrace_pg", _pg_negated)  # (every element negated: the sign is named)
    assert "Every wrong element is the answer with its sign flipped" in msg and "window's last step" not in msg, msg
    msg = _failure("vtrace_pg", _pg_no_window_end)  # wrong at the window's end only: that step is named
    assert "window's last step" in msg and "Every element is wrong" not in msg, msg


@triton.jit
def _ppo(X, P, offs, m, DUAL: tl.constexpr):
    ratio = tl.load(X[0] + offs, mask=m, other=1.0)
    adv = tl.load(X[1] + offs, mask=m, other=0.0)
    clipped = tl.minimum(tl.maximum(ratio, 1.0 - P[0]), 1.0 + P[0])
    obj = tl.minimum(ratio * adv, clipped * adv)
    if DUAL:  # the mistake: on every advantage
        obj = tl.maximum(obj, P[1] * adv)
    return -obj


@triton.jit
def _plain_ppo(X, P, offs, m):
    return _ppo(X, P, offs, m, False)


@triton.jit
def _dual_clip_without_ppo_s_clip(X, P, offs, m):  # r A where PPO takes min(r A, clip(r) A): a round-56 review's case
    ratio = tl.load(X[0] + offs, mask=m, other=1.0)
    adv = tl.load(X[1] + offs, mask=m, other=0.0)
    return -tl.where(adv < 0, tl.maximum(ratio * adv, P[1] * adv), ratio * adv)


@triton.jit
def _dual_clip_both(X, P, offs, m):
    return _ppo(X, P, offs, m, True)


@triton.jit
def _soft(X, P, offs, t, m, T, NEXT: tl.constexpr, ENTROPY: tl.constexpr, LAM_ON_ENTROPY: tl.constexpr = True,
          V_SLIP: tl.constexpr = 0, LAM_AT_END: tl.constexpr = False):
    gamma, alpha, lam = P[0], P[1], P[2]
    r = tl.load(X[0] + offs, mask=m, other=0.0)
    q1, q2 = tl.load(X[1] + offs, mask=m, other=0.0), tl.load(X[2] + offs, mask=m, other=0.0)
    q_min = tl.maximum(q1, q2) if V_SLIP == 2 else tl.minimum(q1, q2)  # V_SLIP 2: the larger critic
    v_soft = q_min + (1.0 if V_SLIP == 1 else -1.0) * alpha * tl.load(X[3] + offs, mask=m, other=0.0)  # 1: + alpha
    has_next = m & (t + 1 < T)
    log_pi = tl.load(X[4] + offs + NEXT, mask=has_next, other=0.0) * ENTROPY
    term = tl.load(X[5] + offs, mask=m, other=0) != 0
    cont = tl.where((has_next | LAM_AT_END) & ~term, lam, 0.0)  # LAM_AT_END: lam at the window's last step too
    boot = tl.where(term, 0.0, gamma)
    weight = cont if LAM_ON_ENTROPY else tl.where(has_next & ~term, 1.0, 0.0)
    return _reset_where_zero(gamma * cont, r + boot * ((1.0 - cont) * v_soft - weight * alpha * log_pi))


@triton.jit
def _soft_entropy_in_a(X, P, offs, t, m, T):  # gamma lam (1 - alpha log_pi_{t+1}): the term multiplying G_{t+1}
    a, b, reset = _soft(X, P, offs, t, m, T, 1, 0.0)
    log_pi = tl.load(X[4] + offs + 1, mask=m & (t + 1 < T), other=0.0)
    return a * (1.0 - P[1] * log_pi), b, reset


@triton.jit
def _soft_entropy_without_gamma(X, P, offs, t, m, T):  # -lam alpha log_pi_{t+1} outside gamma's bracket
    a, b, reset = _soft(X, P, offs, t, m, T, 1, 1.0)
    has_next = m & (t + 1 < T)
    log_pi = tl.load(X[4] + offs + 1, mask=has_next, other=0.0)
    term = tl.load(X[5] + offs, mask=m, other=0) != 0
    cont = tl.where(has_next & ~term, P[2], 0.0)
    return a, b + (P[0] - 1.0) * cont * P[1] * log_pi, reset  # the entropy term's gamma taken back out


@triton.jit
def _soft_entropy_without_lam(X, P, offs, t, m, T):  # -alpha log_pi_{t+1} at full weight, not inside lam's term
    return _soft(X, P, offs, t, m, T, 1, 1.0, False)


@triton.jit
def _soft_value_plus_entropy(X, P, offs, t, m, T):
    return _soft(X, P, offs, t, m, T, 1, 1.0, True, 1)


@triton.jit
def _soft_value_larger_critic(X, P, offs, t, m, T):
    return _soft(X, P, offs, t, m, T, 1, 1.0, True, 2)


@triton.jit
def _soft_no_entropy(X, P, offs, t, m, T):
    return _soft(X, P, offs, t, m, T, 1, 0.0)


@triton.jit
def _soft_entropy_sign(X, P, offs, t, m, T):
    return _soft(X, P, offs, t, m, T, 1, -1.0)


@triton.jit
def _soft_both_signs(X, P, offs, t, m, T):
    return _soft(X, P, offs, t, m, T, 1, -1.0, V_SLIP=1)


@triton.jit
def _soft_same_step(X, P, offs, t, m, T):
    return _soft(X, P, offs, t, m, T, 0, 1.0)


@triton.jit
def _soft_lam_at_the_window_end(X, P, offs, t, m, T):
    return _soft(X, P, offs, t, m, T, 1, 1.0, LAM_AT_END=True)


@triton.jit
def _soft_right_parts(X, P, offs, t, m, T):  # (r, V'_t, log_probs_{t+1}, term, l_t): the solution's loads
    gamma, alpha, lam = P[0], P[1], P[2]
    r = tl.load(X[0] + offs, mask=m, other=0.0)
    v_soft = tl.minimum(tl.load(X[1] + offs, mask=m, other=0.0), tl.load(X[2] + offs, mask=m, other=0.0)) \
        - alpha * tl.load(X[3] + offs, mask=m, other=0.0)
    has_next = m & (t + 1 < T)
    log_pi_next = tl.load(X[4] + offs + 1, mask=has_next, other=0.0)
    term = tl.load(X[5] + offs, mask=m, other=0) != 0
    cont = tl.where(has_next & ~term, lam, 0.0)
    return r, v_soft, log_pi_next, term, cont


@triton.jit
def _soft_no_term_select(X, P, offs, t, m, T):  # the solution without tl.where(term, ...): gamma V' (NaN) added
    gamma, alpha, lam = P[0], P[1], P[2]
    r, v_soft, log_pi_next, term, cont = _soft_right_parts(X, P, offs, t, m, T)
    return gamma * lam, r + gamma * ((1.0 - cont) * v_soft - cont * alpha * log_pi_next), term | (t == T - 1)


@triton.jit
def _soft_no_window_reset(X, P, offs, t, m, T):  # the solution with reset = term: a = gamma lam lets y_T in
    gamma, alpha, lam = P[0], P[1], P[2]
    r, v_soft, log_pi_next, term, cont = _soft_right_parts(X, P, offs, t, m, T)
    return gamma * lam, r + tl.where(term, 0.0, gamma * ((1.0 - cont) * v_soft - cont * alpha * log_pi_next)), term


@triton.jit
def _dual_clip_as_a_cap(X, P, offs, m):  # tl.minimum with c A where the dual clip takes tl.maximum
    ratio = tl.load(X[0] + offs, mask=m, other=1.0)
    adv = tl.load(X[1] + offs, mask=m, other=0.0)
    obj = tl.minimum(ratio * adv, tl.minimum(tl.maximum(ratio, 1.0 - P[0]), 1.0 + P[0]) * adv)
    return -tl.where(adv < 0, tl.minimum(obj, P[1] * adv), obj)


@triton.jit
def _dual_clip_floor_constant(X, P, offs, m):  # the objective floored at -c, a number, where the floor is c A
    ratio = tl.load(X[0] + offs, mask=m, other=1.0)
    adv = tl.load(X[1] + offs, mask=m, other=0.0)
    obj = tl.minimum(ratio * adv, tl.minimum(tl.maximum(ratio, 1.0 - P[0]), 1.0 + P[0]) * adv)
    return -tl.where(adv < 0, tl.maximum(obj, -P[1]), obj)


@triton.jit
def _dual_clip_floor_of_ratio(X, P, offs, m):  # the objective floored at c r, the ratio, where the floor is c A
    ratio = tl.load(X[0] + offs, mask=m, other=1.0)
    adv = tl.load(X[1] + offs, mask=m, other=0.0)
    obj = tl.minimum(ratio * adv, tl.minimum(tl.maximum(ratio, 1.0 - P[0]), 1.0 + P[0]) * adv)
    return -tl.where(adv < 0, tl.maximum(obj, P[1] * ratio), obj)


@triton.jit
def _dual_clip_negated(X, P, offs, m):  # the objective returned, not the loss: every element's sign wrong
    ratio = tl.load(X[0] + offs, mask=m, other=1.0)
    adv = tl.load(X[1] + offs, mask=m, other=0.0)
    obj = tl.minimum(ratio * adv, tl.minimum(tl.maximum(ratio, 1.0 - P[0]), 1.0 + P[0]) * adv)
    return tl.where(adv < 0, tl.maximum(obj, P[1] * adv), obj)


@triton.jit
def _pcg_loads(X, P, offs, m):  # ppo_clip_grad's loads and the clipped ratio
    ratio = tl.load(X[0] + offs, mask=m, other=1.0)
    adv = tl.load(X[1] + offs, mask=m, other=0.0)
    clipped = tl.minimum(tl.maximum(ratio, 1.0 - P[0]), 1.0 + P[0])
    return ratio, adv, clipped


@triton.jit
def _pcg_negated(X, P, offs, m):
    ratio, adv, clipped = _pcg_loads(X, P, offs, m)
    return tl.where(clipped * adv < ratio * adv, 0.0, adv * ratio)


@triton.jit
def _pcg_zero_outside(X, P, offs, m):
    ratio, adv, clipped = _pcg_loads(X, P, offs, m)
    return tl.where(clipped != ratio, 0.0, -adv * ratio)


@triton.jit
def _pcg_wrong_side(X, P, offs, m):
    ratio, adv, clipped = _pcg_loads(X, P, offs, m)
    return tl.where(clipped * adv > ratio * adv, 0.0, -adv * ratio)


@triton.jit
def _pcg_ties_zero(X, P, offs, m):
    ratio, adv, clipped = _pcg_loads(X, P, offs, m)
    return tl.where(clipped * adv <= ratio * adv, 0.0, -adv * ratio)


@triton.jit
def _pcg_ties_half(X, P, offs, m):
    ratio, adv, clipped = _pcg_loads(X, P, offs, m)
    g = tl.where(clipped * adv < ratio * adv, 0.0, -adv * ratio)
    return tl.where(clipped * adv == ratio * adv, 0.5 * g, g)


@triton.jit
def _pcg_no_ratio(X, P, offs, m):
    ratio, adv, clipped = _pcg_loads(X, P, offs, m)
    return tl.where(clipped * adv < ratio * adv, 0.0, -adv)


@triton.jit
def _awr_clipped_both_ways(X, P, offs, m):  # from below too, at 1 / max_weight
    w = tl.exp(tl.load(X[0] + offs, mask=m, other=0.0) / P[0])
    return tl.minimum(tl.maximum(w, 1.0 / P[1]), P[1])


@triton.jit
def _awr_clip_at_20(X, P, offs, m):  # CRR's and AWR's 20 written in, P[1] never read (a review's case)
    return tl.minimum(tl.exp(tl.load(X[0] + offs, mask=m, other=0.0) / P[0]), 20.0)


@triton.jit
def _awr_no_clip(X, P, offs, m):
    return tl.exp(tl.load(X[0] + offs, mask=m, other=0.0) / P[0])


@triton.jit
def _awr_no_beta(X, P, offs, m):
    return tl.minimum(tl.exp(tl.load(X[0] + offs, mask=m, other=0.0)), P[1])


@triton.jit
def _awr_clamped_at_1(X, P, offs, m):  # tl.clamp(w, 1, max_weight): a floor at 1 as well
    return tl.clamp(tl.exp(tl.load(X[0] + offs, mask=m, other=0.0) / P[0]), 1.0, P[1])


@triton.jit
def _awr_exp_over_beta(X, P, offs, m):  # exp(A) / beta: the temperature outside the exp
    return tl.minimum(tl.exp(tl.load(X[0] + offs, mask=m, other=0.0)) / P[0], P[1])


@triton.jit
def _awr_clipped_then_over_beta(X, P, offs, m):  # the clip first, then exp(A) / beta: every weight off at beta != 1
    return tl.minimum(tl.exp(tl.load(X[0] + offs, mask=m, other=0.0)), P[1]) / P[0]


@triton.jit
def _awr_max_for_min(X, P, offs, m):  # the clip with tl.maximum: every weight at least max_weight
    return tl.maximum(tl.exp(tl.load(X[0] + offs, mask=m, other=0.0) / P[0]), P[1])


@triton.jit
def _awr_exponent_clipped(X, P, offs, m):  # A / beta clipped at max_weight, not at ln(max_weight): bounded at e^20
    return tl.exp(tl.minimum(tl.load(X[0] + offs, mask=m, other=0.0) / P[0], P[1]))


@triton.jit
def _awr_exponent_clipped_at_the_log(X, P, offs, m):  # exp(min(A / beta, ln max_weight)): a right answer
    return tl.exp(tl.minimum(tl.load(X[0] + offs, mask=m, other=0.0) / P[0], tl.log(P[1]),
                             propagate_nan=tl.PropagateNan.ALL))  # (a NaN advantage's weight is NaN: round 61)


@triton.jit
def _awr_nan_dropped(X, P, offs, m):  # tl.minimum's default: a NaN advantage's weight comes out max_weight
    return tl.minimum(tl.exp(tl.load(X[0] + offs, mask=m, other=0.0) / P[0]), P[1])


@triton.jit
def _awr_nan_compared(X, P, offs, m):  # a select on w < max_weight: NaN < 20 is False, so the NaN's weight is 20
    w = tl.exp(tl.load(X[0] + offs, mask=m, other=0.0) / P[0])
    return tl.where(w < P[1], w, P[1])


@triton.jit
def _awr_clipped_at_40(X, P, offs, m):  # a clip at another threshold than max_weight
    return tl.minimum(tl.exp(tl.load(X[0] + offs, mask=m, other=0.0) / P[0]), 40.0)


@triton.jit
def _awr_clipped_at_half(X, P, offs, m):
    return tl.minimum(tl.exp(tl.load(X[0] + offs, mask=m, other=0.0) / P[0]), P[1] / 2)


@triton.jit
def _awr_clipped_at_100(X, P, offs, m):  # above every weight of the case where it stops: exp(A / beta) there
    return tl.minimum(tl.exp(tl.load(X[0] + offs, mask=m, other=0.0) / P[0]), 100.0)


@triton.jit
def _awr_times_beta(X, P, offs, m):
    return tl.minimum(tl.exp(tl.load(X[0] + offs, mask=m, other=0.0) * P[0]), P[1])


def test_catalog():
    cat = exercises.catalog()
    assert [c[0] for c in cat] == exercises.names() and len(set(exercises.names())) == len(cat)
    assert all(kind in exercises.KINDS for _, _, kind in cat)
    notebooks = {nb for _, nb, _ in cat}
    for n in range(1, 8):  # every algorithm notebook (01 with 01b, 04 with 04c) has a kernel or hook exercise
        assert any(re.match(rf"0{n}[a-z]?_", nb) and kind in ("kernel", "hook") for _, nb, kind in cat), n
    nb_dir = SOLUTIONS.parent
    assert all((nb_dir / f"{nb}.py").exists() for nb in notebooks), notebooks
    assert sorted(p.stem for p in SOLUTIONS.glob("[!_]*.py")) == sorted(exercises.names())


def test_catalog_follows_the_notebooks():
    """catalog() and names() (a grading CSV's rows) list the exercises notebook by notebook, each notebook's
    in the order its exercise cells (exercises.attempt("name", ...)) come in its .py."""
    cat = exercises.catalog()
    notebooks = [nb for _, nb, _ in cat]
    assert notebooks == sorted(notebooks), notebooks
    for nb in dict.fromkeys(notebooks):
        text = (SOLUTIONS.parent / f"{nb}.py").read_text()
        cells = list(dict.fromkeys(re.findall(r'exercises\.attempt\("(\w+)"', text)))
        assert [n for n, b, _ in cat if b == nb] == cells, nb


def _solution_nature(name):
    """What the solution file does, read from its code: the @triton.jit functions it defines, whether it
    launches one of them (kernel[grid](...)), whether it imports Triton at all, and whether the
    exercise's function is itself a @triton.jit function or hands one to a harness."""
    import ast
    tree = ast.parse((SOLUTIONS / f"{name}.py").read_text())
    jits = {f.name for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)
            and any("jit" in ast.unparse(d) for d in f.decorator_list)}
    launched = {ast.unparse(c.func.value) for c in ast.walk(tree)
                if isinstance(c, ast.Call) and isinstance(c.func, ast.Subscript)} & jits
    harness = {c.func.attr for c in ast.walk(tree) if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute)
               and c.func.attr in ("scan_hook", "map_hook")}
    modules = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names] + \
        [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module]
    triton_imported = any(m == "triton" or m.startswith("triton.") for m in modules)
    return jits, launched, harness, triton_imported


@pytest.mark.parametrize("name", exercises.names())
def test_catalog_kind_matches_the_solution(name):
    """The kind says what the student writes: "kernel", a @triton.jit kernel of theirs and its launch;
    "hook", @triton.jit functions that a kernel they did not write runs (no launch of their own);
    "numpy", plain NumPy/PyTorch, no Triton; "concept", a number, no Triton and no tensors."""
    kind = dict((n, k) for n, _, k in exercises.catalog())[name]
    jits, launched, harness, triton_imported = _solution_nature(name)
    fn = solution(name)
    if kind == "kernel":
        assert launched, (name, "a kernel exercise's solution launches a @triton.jit kernel it defines")
        assert not exercises._is_jit(fn) and not harness, name
    elif kind == "hook":
        assert jits and not launched, (name, "a hook exercise's solution defines @triton.jit functions, launches none")
        assert exercises._is_jit(fn) or harness, (name, "the hook is the answer, or handed to a given kernel")
    elif kind == "numpy":
        assert not triton_imported and not jits, (name, "a numpy exercise's solution is plain NumPy/PyTorch")
    else:
        assert kind == "concept" and not triton_imported, name
        src = (SOLUTIONS / f"{name}.py").read_text()
        assert "torch" not in src and "numpy" not in src, name


@pytest.mark.parametrize("name", exercises.names())
def test_solution_passes(name):
    assert exercises.check(name, solution(name)) is None
    assert exercises.task(name)


@pytest.mark.parametrize("name", exercises.names())
def test_wrong_answers_fail_with_a_message(name, monkeypatch):
    """Each wrong answer fails with a message; where the references are the teacher's keys (KEYED),
    a student's install, without them, checks the fixed cases as with them: the solution passes and
    each wrong answer gets the same message, its hint's slips included."""
    wrong, said = wrong_answers(name), []
    assert len(wrong) >= 2
    for what, fn in wrong:
        with pytest.raises(AssertionError, match=rf"^{name}, .*(expected|got|different bits)") as e:
            exercises.check(name, fn)
        said.append(str(e.value))
        # "values, expected": a hook that returned the wrong count of values (its contract), a verdict like a shape's
        # (a number's answer: "expected 4, your function returned 5")
        assert any(w in str(e.value) for w in ("elements wrong", "shape", "different bits", "values, expected", "): expected",
                                               "your function returned")), (what, str(e.value))
        assert "tl.minimum" not in str(e.value)  # Triton's syntax hint is for code that fails to compile
        if (name, what) in W_SAYS:
            _told_what_is_wrong(name, what, e)
    if name in KEYED:
        monkeypatch.setattr(exercises, "_keys", lambda: None)
        assert exercises.check(name, solution(name)) is None
        for (what, fn), message in zip(wrong, said):
            with pytest.raises(AssertionError) as e:
                exercises.check(name, fn)
            assert str(e.value) == message, what


SEEDS = (5,)  # every seed runs all of an exercise's cases again (test_wrong_answers_fail_on_unseen_cases: seed 3)


@pytest.mark.parametrize("name", exercises.names())
def test_solution_passes_unseen_cases(name):
    for seed in SEEDS:
        assert exercises.check(name, solution(name), seed=seed) is None


@pytest.mark.parametrize("name", exercises.names())
def test_wrong_answers_fail_on_unseen_cases(name):
    """A seed's cases reject wrong answers too: the first two of each exercise (all of them are tried on the
    fixed cases; test_every_kind_of_special_step_a_seed_draws_is_in_the_fixed_cases keeps a seed's cases
    of the same kinds)."""
    for what, fn in wrong_answers(name)[:2]:
        with pytest.raises(AssertionError, match=rf"^{name}, .*\(seed=3\)[:,] .*(expected|got|different bits)"):
            exercises.check(name, fn, seed=3)


# The exercises whose references are the teacher's keys (notebooks/solutions/_keys.py), out of the students'
# wheel: the package holds no other answer to them (docs/TEACHING.md, "Graded or practice")
KEYED = ("matrix_compose", "combine_arrays", "discounted_max", "n_step_returns", "q_lambda", "retrace", "warp_sectors")


def test_the_keyed_exercises_are_those_whose_cases_call_the_keys(monkeypatch):
    called, key = set(), exercises._key
    for name in exercises.names():
        monkeypatch.setattr(exercises, "_key", lambda *a, name=name, **k: (called.add(name), key(*a, **k))[1])
        exercises.cases(name)
        exercises.cases(name, 5)
    assert called == set(KEYED)


def _same_key(x, y):
    """The same value, to the last few bits: NumPy's float64 exp and sums can differ by an ulp from one
    CPU's vector units to another's (seen: 1e-16, 6e-14 on values of order 1-100)."""
    if isinstance(x, tuple):
        return isinstance(y, tuple) and len(x) == len(y) and all(map(_same_key, x, y))
    x, y = np.asarray(x), np.asarray(y)
    if x.dtype.kind == "f":
        return x.shape == y.shape and np.allclose(x, y, rtol=1e-12, atol=1e-12, equal_nan=True)
    return np.array_equal(x, y)


def test_the_recorded_keys_are_the_keys():
    """rltriton_lite/_keys.npz holds what the keys give on every fixed case and on its hints' slips,
    nothing else: a change to the keys or to those cases fails here until they are recorded again."""
    fresh, stored = exercises._record_keys(path=None), exercises._recorded()
    assert fresh.keys() == stored.keys(), "record the keys again: notebooks/solutions/_keys.py says how"
    assert all(_same_key(fresh[k], stored[k]) for k in fresh)


def test_without_the_keys_an_answer_that_changes_its_inputs_is_still_told_what_is_wrong(monkeypatch):
    """A hint's slips are recorded for the fixed inputs: an answer that changed them in place gets
    a verdict that names the change, not an error of the checker's."""
    monkeypatch.setattr(exercises, "_keys", lambda: None)

    def n_step_returns(r, nv, term, gamma, n):
        return solution("n_step_returns")(r.mul_(2.0), nv, term, gamma, n)

    with pytest.raises(AssertionError, match=r"^n_step_returns, .*: your function changed its input r in place"):
        exercises.check("n_step_returns", n_step_returns)


def test_a_right_answer_that_changes_its_input_in_place_is_refused_naming_the_input():
    """The caller reads its arrays again: an answer right in its values but written into an input is
    refused, with the input's name, an element that changed, and the fix."""
    right = solution("segment_carries")

    def segment_carries(A, B, reset, initial):
        carries = right(A, B, reset, initial)
        B[:, -1] = carries[:, -1]  # B used as scratch space: the caller's B is changed
        return carries

    with pytest.raises(AssertionError, match=r"^segment_carries, .*: your function changed its input B in place "
                                             r"\(element \[\d+, \d+\]: was .+, now .+\); the caller's arrays must "
                                             r"not change: work on a copy \(B\.copy\(\)\)"):
        exercises.check("segment_carries", segment_carries)

    td = solution("td_target_kernel")

    def td_target_kernel(rewards, next_values, terminated, gamma):
        out = td(rewards, next_values, terminated, gamma)
        next_values.zero_()  # a tensor input changed after the kernel: refused the same way
        return out

    with pytest.raises(AssertionError, match=r"^td_target_kernel, .*: your function changed its input next_values in "
                                             r"place \(element \[.*\]: was .+, now 0\).*next_values\.clone\(\)"):
        exercises.check("td_target_kernel", td_target_kernel)


@pytest.mark.parametrize("name", KEYED)
def test_a_seed_s_recorded_values_check_as_the_keys_do(tmp_path, monkeypatch, name):
    """What the grader's notebook processes hold instead of the keys (tools/grade.py): the keys'
    values on a seed's cases, their hints' slips and the replay's second draw, recorded into a file
    (_record_keys with a seed). With them alone the seed's cases give the same verdicts as with the
    keys, and another seed is refused."""
    said = []
    for _, fn in wrong_answers(name):
        with pytest.raises(AssertionError) as e:
            exercises.check(name, fn, seed=3)
        said.append(str(e.value))
    path = tmp_path / "keys.npz"
    exercises._record_keys(path, seed=3, only=[name])
    assert exercises._recorded_seed(path) == 3
    table = {**exercises._recorded(), **exercises._load_recorded(path)}
    monkeypatch.setattr(exercises, "_keys", lambda: None)
    monkeypatch.setattr(exercises, "_recorded", lambda: table)
    assert exercises.check(name, solution(name), seed=3) is None
    for (what, fn), message in zip(wrong_answers(name), said):
        with pytest.raises(AssertionError) as e:
            exercises.check(name, fn, seed=3)
        assert str(e.value) == message, what
    with pytest.raises(ValueError, match=rf"^{name}: seed=4: "):
        exercises.check(name, solution(name), seed=4)
    for n, what, fn, why in COPIED_THROUGH_A_KERNEL:  # the replay's values are there: a copy is refused
        if n == name:
            with pytest.raises(AssertionError, match=rf"^{name}, .*{why}"):
                exercises.check(name, fn, seed=3)


def test_without_the_keys_a_seed_is_refused_where_the_package_holds_no_answer(monkeypatch):
    monkeypatch.setattr(exercises, "_keys", lambda: None)
    for name in exercises.names():
        if name in KEYED:
            with pytest.raises(ValueError, match=rf"^{name}: seed=4: cases drawn from a seed are checked with the "
                                                 r"teacher's keys, which this install does not have"):
                exercises.check(name, solution(name), seed=4)
        else:
            assert exercises.cases(name, 4)  # drawn and worked out by the package's own code


def _values(x):
    """A case's arguments, expected values and marks as plain data, to compare cases with."""
    if isinstance(x, torch.Tensor):
        return ("tensor", str(x.dtype), tuple(x.stride()), x.detach().cpu().numpy())
    if isinstance(x, np.ndarray):
        return ("array", x)
    if isinstance(x, (tuple, list)):
        return tuple(_values(y) for y in x)
    if isinstance(x, dict):
        return tuple((k, _values(v)) for k, v in x.items())
    return x


def _same(x, y):
    if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
        return (isinstance(x, np.ndarray) and isinstance(y, np.ndarray) and x.shape == y.shape and x.dtype == y.dtype
                and np.array_equal(x, y, equal_nan=x.dtype.kind == "f"))
    if isinstance(x, tuple) and isinstance(y, tuple):
        return len(x) == len(y) and all(_same(a, b) for a, b in zip(x, y))
    return type(x) is type(y) and x == y


def _structure(x):
    """What a seed keeps: the types, dtypes and number of axes, not the values or the sizes."""
    if isinstance(x, torch.Tensor):
        return ("tensor", x.dtype, x.dim())
    if isinstance(x, np.ndarray):
        return ("array", x.dtype.kind, x.ndim)
    if isinstance(x, (tuple, list)):
        return tuple(_structure(y) for y in x)
    if isinstance(x, dict):
        return tuple((k, _structure(v)) for k, v in x.items())
    return type(x).__name__


@pytest.mark.parametrize("name", exercises.names())
def test_a_seed_draws_other_cases_of_the_same_structure(name):
    fixed, one, two = (exercises.cases(name, seed) for seed in (None, 1, 2))
    assert _same(_values(fixed), _values(exercises.cases(name)))  # the notebooks' cases, the same every time
    assert _same(_values(one), _values(exercises.cases(name, 1)))  # a seed gives the same cases every time
    assert len(one) == len(two) == len(fixed)
    for f, a, b in zip(fixed, one, two):
        assert _structure(a[1:]) == _structure(b[1:]) == _structure(f[1:]), (name, f[0])
        assert a[0].endswith("(seed=1)") and b[0].endswith("(seed=2)")
    # other values in every case (the concept exercise keeps its 1 x 1 rollout), and other sizes
    differ = [not _same(_values(a[1:]), _values(b[1:])) for a, b in zip(one, two)]
    kind = {n: k for n, _, k in exercises.catalog()}[name]
    assert all(differ) if kind != "concept" else any(differ), differ
    assert any(not _same(_values(a[1:]), _values(f[1:])) for a, f in zip(one, fixed))
    assert _sizes([c[1] for c in one]) != _sizes([c[1] for c in two]) or name in ("dual_clip", "awr_weights", "noise_verdict"), name  # values, not sizes


def _sizes(x):
    """The shapes of a case's arrays and its ints (a length, a chunk, a count of actions)."""
    if isinstance(x, (torch.Tensor, np.ndarray)):
        return [tuple(x.shape)]
    if isinstance(x, (tuple, list)):
        return [s for y in x for s in _sizes(y)]
    if isinstance(x, dict):
        return _sizes(list(x.values()))
    return [x] if isinstance(x, int) and not isinstance(x, bool) else []


def test_seed_must_be_a_non_negative_int():
    for seed in (-1, 1.5, "3", True):
        with pytest.raises(TypeError, match="seed must be None or an int"):
            exercises.check("awr_weights", solution("awr_weights"), seed=seed)


def test_attempt_tells_a_starter_from_a_wrong_answer(capsys):
    def starter(*args):
        raise NotImplementedError

    # each verdict printed, nothing returned (a notebook would echo a bool under the message)
    assert exercises.attempt("gae_pairs", starter) is None
    assert exercises.attempt("awr_weights", None) is None  # a Triton exercise's starter
    assert capsys.readouterr().out.count("not attempted yet") == 2
    # a fresh notebook's Run All has run the starter: fix() speaks of no check, not of "the message above"
    assert exercises.fix("gae_pairs") == "gae_pairs: no fix to show: no attempt of yours has been checked yet in " \
                                         "this session."
    assert exercises.attempt("gae_pairs", solution("gae_pairs")) is None
    assert capsys.readouterr().out == "gae_pairs: correct on every case\n"
    # a wrong answer: its message printed, not raised, so Run All goes on past the cell
    assert exercises.attempt("gae_pairs", lambda r, v, nv, term, trunc, g, lam: (r * 0, r)) is None
    assert capsys.readouterr().out.startswith("gae_pairs: WRONG. gae_pairs, shape (1, 5): the error starts")
    # an error in the answer itself is raised as it is, noted with the case and the student's line,
    # and leaves no earlier check's fix behind (a review: fix() showed the one before)
    with pytest.raises(AssertionError):
        exercises.check("cleanrl_advantages", _cleanrl_with(bootstrap=False))
    assert exercises.fix("cleanrl_advantages").startswith("next_value is the value after the last step: rl.gae's")

    def no_time_dim(rewards, values, dones, next_value, next_done, gamma, gae_lambda):
        return rl.gae(rewards, values, bootstrap_value=next_value.reshape(-1))

    capsys.readouterr()
    assert exercises.attempt("cleanrl_advantages", no_time_dim) is None  # printed: Run All goes on
    said = capsys.readouterr().out.splitlines()
    assert said[0].startswith("cleanrl_advantages: ERROR. ValueError: bootstrap_value of shape (3,) does not broadcast")
    assert said[1].startswith("(cleanrl_advantages, no episode ends (every step bootstraps, the last from next_value), "
                              "shape (8, 3): your function raised it at line ")
    assert said[1].endswith(" of no_time_dim (return rl.gae(rewards, values, bootstrap_value=next_value.reshape(-1))))")
    assert said[2] == "(exercises.check('cleanrl_advantages', no_time_dim) raises it, with its traceback.)"
    assert "no fix beyond the message above" in exercises.fix("cleanrl_advantages")
    with pytest.raises(ValueError, match="bootstrap_value of shape") as e:
        exercises.check("cleanrl_advantages", no_time_dim)
    assert e.value.__notes__[-1] == said[1]
    exercises.attempt("vtrace_floor_bytes", lambda B, T, elem_bytes: B // 0)
    assert capsys.readouterr().out.startswith("vtrace_floor_bytes: ERROR. ZeroDivisionError: integer division or "
                                              "modulo by zero\n(vtrace_floor_bytes, B=1, T=1, 4-byte elements: your "
                                              "function raised it at line ")


def test_bad_arguments():
    with pytest.raises(ValueError, match="unknown exercise 'nope'"):
        exercises.check("nope", print)
    with pytest.raises(TypeError, match="fn must be a function"):
        exercises.check("awr_weights", 3)
    with pytest.raises(TypeError, match="fn must be a function"):
        exercises.check("awr_weights", None)
    with pytest.raises(AssertionError, match="must return the pair"):
        exercises.check("gae_pairs", lambda *a: a[0])


@pytest.mark.parametrize("name,notebook", [(n, nb) for n, nb, _ in exercises.catalog()])
def test_notebook_has_the_starter(name, notebook):
    """Each exercise is set in its notebook: a starter function of its name and the checking cell."""
    text = (SOLUTIONS.parent / f"{notebook}.py").read_text()
    assert (f"def {name}(" in text or f"\n{name} = None\n" in text) and f'exercises.attempt("{name}", {name})' in text


@triton.jit
def _does_not_compile(X, P, offs, m):
    return tl.load(X[0] + offs, mask=m, other=0.0) * undefined_name  # noqa: F821


@triton.jit
def _past_the_tuple(X, P, offs, m):
    return tl.load(X[0] + offs, mask=m, other=0.0) / P[2]  # awr_weights' P is (beta, max_weight)


def test_a_tuple_where_one_number_is_expected_is_named():
    """A later review's case: host_bound returning the shape (B, T) was told "expected shape (), got (2,)"."""
    msg = _failure("host_bound", lambda rows, algorithm, pass_: (64, 16384))
    assert "expected one number, your function returned a tuple of 2" in msg and "shape" not in msg.split(":")[1], msg


def test_a_hook_that_fails_to_compile_gets_the_hint_for_its_error():
    """The hint says what the error is about (a name not defined, an index past a tuple), not
    the reminder of the operators on blocks."""
    with pytest.raises(RuntimeError, match=r"(?s)awr_weights, beta=1.0: _does_not_compile failed to compile or run"
                                           r".*A name your @triton\.jit code uses is not defined") as e:
        exercises.check("awr_weights", _does_not_compile)
    assert "tl.minimum" not in str(e.value)
    with pytest.raises(RuntimeError, match=r"(?s)_past_the_tuple failed to compile or run.*An index past the end of "
                                           r"a tuple: X, P and keep hold only the slots the task lists") as e:
        exercises.check("awr_weights", _past_the_tuple)
    # raised without the chain (the harness's and Triton's frames, a later review's 40 lines), the line named
    assert e.value.__cause__ is None and e.value.__suppress_context__, e.value
    if exercises.INTERPRET:  # (compiled, Triton's own message holds the line: "at 2:53: ... / P[2]")
        line = _past_the_tuple.fn.__code__.co_firstlineno + 2
        assert f"_past_the_tuple failed to compile or run at line {line} of _past_the_tuple (return tl.load(X[0] + " \
               "offs, mask=m, other=0.0) / P[2]  # awr_weights' P is (beta, max_weight))" in str(e.value), e.value


@triton.jit
def _awr_inverted(X, P, offs, m):
    return ~tl.load(X[0] + offs, mask=m, other=0.0)  # ~ on a float block: an error about an operator


def test_the_operators_reminder_follows_only_an_error_about_operators(tmp_path):
    """A round-50 review: a combine called with 6 arguments where it takes 5 (a TypeError) was followed by
    the reminder of &, |, ~ rather than and, or: off the topic. That error gets a hint of its own; an error
    about an operator (~ on a float) keeps the reminder."""
    fewer = [("def _reset_combine(a1, b1, k1, a2, b2, k2):", "def _reset_combine(a1, b1, k1, a2, b2):"), ("k2", "k1")]
    with pytest.raises(RuntimeError, match="failed to compile or run") as e:
        exercises.check("reset_scan", with_edits("reset_scan", fewer, tmp_path))
    assert "rather than and, or" not in str(e.value) and "tl.minimum" not in str(e.value), e.value
    if exercises.INTERPRET:  # (compiled, the compiler words the error its own way)
        assert "positional arguments but 6 were given" in str(e.value), e.value
        assert "tl.associative_scan calls its combine with 2k values for a scan of k blocks" in str(e.value), e.value
    with pytest.raises(RuntimeError, match=r"(?s)_awr_inverted failed to compile or run.*In Triton, on blocks: &, \|, "
                                           r"~ rather than and, or, not"):
        exercises.check("awr_weights", _awr_inverted)


def test_the_hint_reads_the_error_a_compile_wraps():
    """Compiled, Triton reports the hook's error at the hook's call site and chains the error in
    the hook (``raise ... from``): the hint and the message are the inner error's."""
    class CompilationError(Exception):  # (Triton's, by name)
        pass
    outer = CompilationError("at 4:23:\n    tl.store(O + offs, HOOK(X, P, offs, m), mask=m)")
    outer.__cause__ = inner = CompilationError("at 2:53:\n    ... / P[2]\nlist index out of range")
    inner.__cause__ = IndexError("list index out of range")  # (what Triton 3.6 says of P[2] compiled)
    assert "An index past the end of a tuple" in exercises._error_hint(outer, None)
    assert exercises._raised_from(outer) is inner


def test_the_message_points_where_the_error_starts():
    """A reverse scan's error spreads to every earlier step: the message names the latest wrong
    step of the row and what is special about it, not index (0, 0)."""
    with pytest.raises(AssertionError, match=r"starts at the latest wrong step, index \(0, 255\).*\n.*last step of a chunk"):
        exercises.check("chunked_scan", _chunked_with(NO_CARRY=True))
    g = solution("gae_pairs")
    with pytest.raises(AssertionError, match=r"(?s)truncations(, NaN next values behind the terminations)?: "
                                             r"the error starts.*Hint: that step is a truncation"):
        exercises.check("gae_pairs", lambda r, v, nv, term, trunc, gm, lam: g(r, v, nv, term, no_flags(trunc), gm, lam))
    with pytest.raises(AssertionError, match=r"Hint: These are Q\(lambda\)'s targets with the trace not cut at the "
                                             r"window's last step"):
        exercises.check("q_lambda", _q_lambda_no_window_cut)  # named: a review's case (it was positional)


def test_every_element_wrong_in_a_scan_says_so_before_the_step_where_it_shows_first():
    """A review: a bug shared by every step (a load's layout, SARSA's bootstrap) stops at the step the
    scan starts from, and was told only what that step is, the hint of a missing window-end cut. (SARSA's
    bootstrap is named since round 57: the generic words are for a slip no hint knows, here SARSA's target
    through a q_lambda hint that is blind to it.)"""
    with pytest.raises(AssertionError) as e:
        with mock.patch.object(exercises, "_q_lambda_hint", lambda *args: None):
            exercises.check("q_lambda", _q_lambda_sarsa)
    said = str(e.value)
    assert "(60 of 60 elements wrong)\nHint: Every element is wrong. Look first at what every step shares: a load's " \
           "address or layout" in said and "The first wrong step is the window's last step" in said, said
    with pytest.raises(AssertionError) as e:  # and with the hint that knows it: named
        exercises.check("q_lambda", _q_lambda_sarsa)
    assert "Hint: These are the targets bootstrapped from the Q of the action taken" in str(e.value), str(e.value)
    # (where a mark says the last step itself, the padding's, it is said alone: the test just above this one's)


@triton.jit
def _td_target_unmasked(R, V, D, OUT, gamma, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    done = tl.load(D + i) != 0
    tl.store(OUT + i, tl.load(R + i) + tl.where(done, 0.0, gamma * tl.load(V + i)))


@pytest.mark.skipif(not exercises.INTERPRET, reason="the bounds check is the interpreter's (compiled, a stray "
                    "access is the GPU's to catch)")
def test_a_kernel_without_masks_is_stopped_before_it_corrupts_memory():
    def td_target_kernel(rewards, next_values, terminated, gamma):
        out = torch.empty_like(rewards)
        _td_target_unmasked[(triton.cdiv(rewards.numel(), 128),)](rewards, next_values, terminated, out, gamma,
                                                                   rewards.numel(), BLOCK=128)
        return out

    x = torch.zeros(8)
    # (the lanes counted depend on where the allocator put the other tensors: some may land inside one)
    with pytest.raises(AssertionError, match=r"td_target_kernel, 8 elements: a tl.load at line \d+ \(done = "
                                             r"tl.load\(D \+ i\) != 0\) touched memory outside every tensor passed "
                                             r"to the kernel \(\d+ of 128 active lanes; lanes? \d+") as e:
        exercises.check("td_target_kernel", td_target_kernel)
    line = int(re.search(r"at line (\d+)", str(e.value)).group(1))
    assert 1 <= int(re.search(r"\((\d+) of 128", str(e.value)).group(1)) <= 120
    assert line == _td_target_unmasked.fn.__code__.co_firstlineno + 3
    assert torch.equal(x, torch.zeros(8))  # the process goes on


@triton.jit
def _atomic_sum(X, OUT, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.atomic_add(OUT, tl.sum(tl.load(X + offs, mask=offs < n, other=0.0), 0) / n)


@triton.jit
def _one_program_sum(X, OUT, n, BLOCK: tl.constexpr):
    acc = 0.0
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.sum(tl.load(X + offs, mask=offs < n, other=0.0), 0)
    tl.store(OUT, acc / n)


@pytest.mark.skipif(not exercises.INTERPRET, reason="launches and atomics are counted by the interpreter")
@triton.jit
def _awr_nan_after_first(X, P, offs, m):
    adv = tl.load(X[0] + offs, mask=m, other=0.0)
    w = tl.minimum(tl.exp(adv / P[0]), P[1])
    return tl.where(offs == 0, w + 1.0, w + (adv - adv) / (adv - adv))  # wrong at 0, NaN everywhere after


def test_the_nan_note_names_the_select_of_the_answer_s_own_code():
    """A review: plain torch code (n_step_returns) was told of "a select (tl.where)"; Triton code keeps it."""
    wrong = dict(wrong_answers("n_step_returns"))["ignores terminations"]
    with pytest.raises(AssertionError, match=r"of them NaN or inf .*a select \(torch\.where\)") as e:
        exercises.check("n_step_returns", wrong)
    assert "tl.where" not in str(e.value).split("\n")[0]
    with pytest.raises(AssertionError, match=r"of them NaN or inf .*a select \(tl\.where\)"):
        exercises.check("awr_weights", _awr_nan_after_first)


def test_two_stage_mean_names_padding_lanes_that_add_a_constant():
    """A review: other=1.0 in a masked load (the padding adds 1 per lane) was blamed on memory no program
    wrote; the lanes past n are named, and an answer off by an amount no padding gives is not."""
    x = torch.ones(3000, device=DEVICE)  # 3 blocks of 1024: 72 padding lanes in the first launch
    said = exercises._padding_added(x, torch.tensor((3000 + 72 * 2.0) / 3000))
    assert said and "that is 2 for each of the 72 padding lanes (past n in the first launch" in said
    assert exercises._padding_added(x, torch.tensor((3000 + 1021 * 1.0) / 3000)) and \
        "past the last partial in the second launch" in exercises._padding_added(x, torch.tensor(4021 / 3000))
    assert exercises._padding_added(x, torch.tensor(3000.37 / 3000)) is None  # no multiple of a padding count
    assert exercises._padding_added(x, torch.tensor(1.0)) is None  # right: nothing added


def test_two_stage_mean_refuses_atomics_and_a_single_launch():
    def atomic(x):
        out = torch.zeros((), device=x.device)
        _atomic_sum[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
        return out

    def one_program(x):
        out = torch.zeros((), device=x.device)
        _one_program_sum[(1,)](x, out, x.numel(), BLOCK=1024)
        return out

    with pytest.raises(AssertionError, match=r"two_stage_mean, n=1: your kernel uses an atomic"):
        exercises.check("two_stage_mean", atomic)
    with pytest.raises(AssertionError, match=r"two_stage_mean, n=1: 1 kernel launch: a one-program sum"):
        exercises.check("two_stage_mean", one_program)

    def partials_then_torch(x):  # the first stage in Triton, the second in PyTorch (the tenth student review)
        parts = torch.zeros(triton.cdiv(x.numel(), 1024), device=x.device)
        for i in range(parts.numel()):
            _one_program_sum[(1,)](x[i * 1024:], parts[i:], min(1024, x.numel() - i * 1024), BLOCK=1024)
        return parts.sum() / x.numel()

    with pytest.raises(AssertionError, match=r"two_stage_mean, n=1: 1 kernel launch: your partials were added "
                                             r"outside your kernels"):
        exercises.check("two_stage_mean", partials_then_torch)

    def one_program_twice(x):  # two launches, but the first walks the whole input alone
        part, out = torch.zeros((), device=x.device), torch.zeros((), device=x.device)
        _one_program_sum[(1,)](x, part, x.numel(), BLOCK=1024)
        _one_program_sum[(1,)](part, out, 1, BLOCK=16)
        return out

    with pytest.raises(AssertionError, match=r"two_stage_mean, n=\d+: every launch of yours ran one program, on "
                                             r"\d+ elements"):
        exercises.check("two_stage_mean", one_program_twice)

    def finish_everywhere(x):  # the finisher launched with a program per partial (a review's case)
        glob, n = solution("two_stage_mean").__globals__, x.numel()
        partials, out = torch.empty(triton.cdiv(n, 1024), device=x.device), torch.empty((), device=x.device)
        glob["_partials"][(partials.numel(),)](x, partials, n, BLOCK=1024)
        glob["_finish"][(partials.numel(),)](partials, out, partials.numel(), n, BLOCK=1024)
        return out

    with pytest.raises(AssertionError, match=r"two_stage_mean, n=\d+: your last launch ran \d+ programs: each adds "
                                             r"all the partials"):
        exercises.check("two_stage_mean", finish_everywhere)  # (n=1 and the n < 1024 case pass: one partial)


# ---- The special steps: what a seed can draw, the fixed cases show ----------------------------------
def _mark_kinds(name, seed):
    """The names of the marks that some step of some case of ``cases(name, seed)`` carries."""
    return {k for case in exercises.cases(name, seed) if len(case) > 4 for k, m in case[4].items() if np.any(m)}


@pytest.mark.parametrize("name", exercises.names())
def test_every_kind_of_special_step_a_seed_draws_is_in_the_fixed_cases(name):
    """Seeds are no lottery: a mistake at a kind of step (an episode end at the window's last
    step, a chunk boundary ...) that grading with a seed can meet, the notebook's checks meet too."""
    fixed = _mark_kinds(name, None)
    for seed in range(1, 6):
        missing = _mark_kinds(name, seed) - fixed
        assert not missing, f"{name}, seed {seed} marks steps the fixed cases never show: {sorted(missing)}"
    for base, at_end in exercises.AT_WINDOW_END.items():  # every episode-end flag, also on the last step
        assert base not in fixed or at_end in fixed, (name, at_end)


# ---- Write it yourself: the package's answers are refused ------------------------------------------
def _gae_pairs_by_the_package(rewards, values, next_values, terminated, truncated, gamma, lam):
    return 0, rl.gae(rewards, values, next_values=next_values, terminated=terminated, truncated=truncated,
                     gamma=gamma, lambda_=lam).advantages


def _block_scan_by_the_reference(rewards, gamma, last_value):
    return torch.as_tensor(rl.reference.discounted_returns(rewards.cpu().numpy(), gamma=gamma,
                                                           bootstrap_value=last_value))


def _reset_scan_by_the_package(rewards, terminated, gamma, chunk):
    return rl.discounted_returns(rewards, gamma=gamma, terminated=terminated, backend="triton")


def _returns_autograd_by_the_package(rewards, terminated, gamma):
    return rl.discounted_returns(rewards, gamma=gamma, terminated=terminated)


@triton.jit
def _combine(a1, b1, a2, b2):
    return a2 * a1, b2 + a2 * b1


@triton.jit
def _whole_row(R, G, gamma, T, BLOCK: tl.constexpr):  # one block per row: no chunks, no carry
    row = tl.program_id(0)
    t = tl.arange(0, BLOCK)
    m = t < T
    a_s, b_s = tl.associative_scan((tl.where(m, gamma, 1.0), tl.load(R + row * T + t, mask=m, other=0.0)), 0,
                                   _combine, reverse=True)
    tl.store(G + row * T + t, b_s, mask=m)


def _token_gae_pairs_by_the_package(rewards, values, mask, gamma, lam):  # integrations.verl's own two scans
    adv = rl.gae(rewards, values, gamma=gamma, lambda_=lam, mask=mask).advantages
    return (~mask).to(adv.dtype), adv


def _cleanrl_loop_of_the_package():  # 08's cell: cleanrl_gae = cleanrl.loop
    from rltriton_lite.integrations import cleanrl
    return cleanrl.loop


def _cleanrl_loop_called():
    cleanrl_gae = _cleanrl_loop_of_the_package()

    def lean_gae_loop(rewards, values, dones, next_value, next_done, gamma, gae_lambda):
        return cleanrl_gae(rewards, values, dones, next_value, next_done, gamma, gae_lambda)
    return lean_gae_loop


def _chunked_scan_in_one_block(rewards, gamma, chunk):
    out = torch.empty_like(rewards)
    _whole_row[(rewards.shape[0],)](rewards, out, gamma, rewards.shape[1],
                                    BLOCK=triton.next_power_of_2(rewards.shape[1]))
    return out


BYPASSES = [
    ("gae_pairs", _gae_pairs_by_the_package, r"write it yourself: rltriton_lite\.gae is the package's answer "
                                             r"\(of the package's functions, gae_pairs may call only "
                                             r"rltriton_lite\.linear_scan, as its task says\)"),
    ("block_scan", _block_scan_by_the_reference, r"write it yourself: rltriton_lite\.reference\.discounted_returns is "
                                                 r"the package's answer"),
    ("reset_scan", _reset_scan_by_the_package, r"write it yourself: rltriton_lite\.discounted_returns is"),
    ("returns_autograd", _returns_autograd_by_the_package, r"write it yourself: rltriton_lite\.discounted_returns "
                                                           r"is.*may call only rltriton_lite\.exercises\.scan_hook"),
    ("gae_prologue", rl_returns._gae_prologue, r"write it yourself: the function you passed is "
                                               r"rltriton_lite\.returns\._gae_prologue"),
    pytest.param("chunked_scan", _chunked_scan_in_one_block,
                 r"rows of several chunks.*: your kernel ran a tl\.associative_scan over 512 steps at once where "
                 r"this case asks for chunks of 64", id="chunked_scan",
                 marks=pytest.mark.skipif(not exercises.INTERPRET, reason="a scan's width is the interpreter's to see")),
    ("token_gae_pairs", _token_gae_pairs_by_the_package, r"write it yourself: rltriton_lite\.gae is the package's "
                                                         r"answer \(of the package's functions, token_gae_pairs may "
                                                         r"call only rltriton_lite\.linear_scan, as its task "
                                                         r"says\)"),
    # section 5's cleanrl_gae = cleanrl.loop, passed or called (a round-50 review: told "the package's answer")
    ("lean_gae_loop", _cleanrl_loop_of_the_package(), r"the function you passed is rltriton_lite\.integrations\."
                                                      r"cleanrl\.loop, CleanRL's own loop \(section 5's cleanrl_gae, "
                                                      r"as ppo\.py has it\), at about 15 tensor ops per step\. The "
                                                      r"task asks for your version of that loop with at most 6 ops "
                                                      r"per step"),
    ("lean_gae_loop", _cleanrl_loop_called(), r"your lean_gae_loop reads rltriton_lite\.integrations\.cleanrl\.loop "
                                              r"\(as cleanrl_gae\), which is CleanRL's own loop.* at most 6 ops per "
                                              r"step"),
]


BYPASSES = [pytest.param(*b, id=b[0]) if type(b) is tuple else b for b in BYPASSES]


@pytest.mark.parametrize("name,fn,why", BYPASSES)
def test_the_package_s_own_answer_is_refused(name, fn, why):
    with pytest.raises(AssertionError, match=rf"^{name}, .*{why}"):
        exercises.check(name, fn)
    assert rl.gae is rl_returns.gae and rl.reference.discounted_returns.__name__ == "discounted_returns"  # restored
    assert rl_returns._gae_prologue is _PACKAGE_GAE_PROLOGUE and exercises.scan_hook.__name__ == "scan_hook"


def _reset_scan_that_hides_the_refusal(rewards, terminated, gamma, chunk):
    try:
        return rl.discounted_returns(rewards, gamma=gamma, terminated=terminated)
    except AssertionError:
        return solution("reset_scan")(rewards, terminated, gamma, chunk)


def _gae_pairs_imported_by_name(rewards, values, next_values, terminated, truncated, gamma, lam):
    return 0, package_gae(rewards, values, next_values=next_values, terminated=terminated, truncated=truncated,
                          gamma=gamma, lambda_=lam).advantages


@triton.jit
def _gae_prologue_calling_the_package(X, SX, P, row, t, m, T, ACC: tl.constexpr):
    return rl_returns._gae_prologue(X, SX, P, row, t, m, T, ACC)


def test_other_ways_to_the_package_s_answer_are_refused():
    with pytest.raises(AssertionError, match=r"^reset_scan, .*rltriton_lite\.discounted_returns is the package's"):
        exercises.check("reset_scan", _reset_scan_that_hides_the_refusal)  # a try does not hide it
    with pytest.raises(AssertionError, match=r"^gae_pairs, .*your _gae_pairs_imported_by_name reads rltriton_lite\.gae "
                                             r"\(as package_gae\), which is the package's answer"):
        exercises.check("gae_pairs", _gae_pairs_imported_by_name)  # imported by name before the check
    with pytest.raises(AssertionError, match=r"^gae_prologue, .*rltriton_lite\.returns\._gae_prologue is the package's"):
        exercises.check("gae_prologue", _gae_prologue_calling_the_package)  # called inside a @triton.jit
    with pytest.raises(AssertionError, match=r"^chunked_scan, .*exercises\.scan_hook is the package's answer"):
        exercises.check("chunked_scan", lambda r, g, c: exercises.scan_hook(_returns_fwd, (r, torch.zeros_like(
            r, dtype=torch.bool)), (g,), chunk=c))


# ---- Messages that know the exercise ----------------------------------------------------------------
def test_results_are_named_and_a_missing_return_is_said():
    s = solution("returns_autograd")
    with pytest.raises(AssertionError, match=r"returns_autograd, shape \(1, 6\), result 1 \(dL/drewards\): the error"):
        exercises.check("returns_autograd", _returns_autograd_with(lambda ctx, g: g * 1.5))
    with pytest.raises(AssertionError, match=r"returns_autograd, shape \(1, 6\), result 0 \(the returns G\)"):
        exercises.check("returns_autograd", lambda r, d, g: s(r, d, g) * 1.5)
    with pytest.raises(AssertionError, match=r"block_scan, a short row, T=\d+, last_value 1.5: your function returned "
                                             r"None, not a tensor \(or array\) of shape \(\d+,\) \(a missing return\?\)"):
        exercises.check("block_scan", lambda r, g, v: None)
    with pytest.raises(AssertionError, match=r"vtrace_floor_bytes, .*: your function returned a str, not a number"):
        exercises.check("vtrace_floor_bytes", lambda B, T, e: "24")
    with pytest.raises(AssertionError, match=r"matrix_compose, n=1: expected 2 results \(A, b\), your function "
                                             r"returned None"):
        exercises.check("matrix_compose", lambda p, q: None)


def _block_scan_padding_gamma(rewards, gamma, last_value):  # lanes past T (gamma, 0), not the identity
    return _block_scan_slip(3)(rewards, gamma, last_value)


def test_an_error_at_the_last_step_of_a_block_points_at_the_padding():
    block_scan = _block_scan_padding_gamma
    with pytest.raises(AssertionError, match=r"(?s)block_scan, a short row, T=5.*index \(4,\).*\nHint: that step "
                                             r"is the row's last step, with padding lanes.*lanes past T must be the "
                                             r"identity \(1, 0\)"):  # (no "every element" preamble: the mark says it)
        exercises.check("block_scan", block_scan)


@triton.jit
def _awr_with_python(X, P, offs, m):
    a = tl.load(X[0] + offs, mask=m, other=0.0)
    return min(tl.exp(a / P[0]), P[1]) if P[0] > 0 and not P[1] < 0 else a


@pytest.mark.skipif(not exercises.INTERPRET, reason="compiled, Triton 3.6 takes Python's min and `and` on blocks "
                    "(deprecated), so the values come out right")
def test_python_on_blocks_gets_the_triton_hint_even_when_it_runs():
    with pytest.raises(AssertionError, match=r"(?s)awr_weights, beta=1.0: at index.*elements wrong.*Your @triton\.jit "
                                             r"code uses Python where a block may be \(_awr_with_python: `and`, `if`, "
                                             r"`min\(`, `not` in `return min.*tl\.minimum"):
        exercises.check("awr_weights", _awr_with_python)


@triton.jit
def _awr_with_a_static_if(X, P, offs, m):
    CLIP: tl.constexpr = 1
    a = tl.exp(tl.load(X[0] + offs, mask=m, other=0.0) / P[0])
    if CLIP == 1:  # decided when compiling: legal Triton
        a = tl.minimum(a, P[1])
    if a > 0:  # on a block
        a = a + 0.0
    return a


def test_an_if_on_a_local_constexpr_is_not_python_on_a_block():
    """A review's case: a local VAR: tl.constexpr = 1 tested with if got the Python-on-blocks warning."""
    assert exercises._python_on_blocks(_awr_with_a_static_if.fn) == ["`if` in `if a > 0:  # on a block`"]


# ---- What a task asks for besides the values ----------------------------------------------------
def _torch_returns(r, d, gamma, last=0.0):
    """The returns in PyTorch, a loop over time (time last, a reset selected, NaN-safe): no kernel."""
    G, carry = torch.empty_like(r), torch.full(r.shape[:-1], float(last), dtype=r.dtype, device=r.device)
    for t in reversed(range(r.shape[-1])):
        carry = torch.where(d[..., t], r[..., t], r[..., t] + gamma * carry)
        G[..., t] = carry
    return G


def _torch_discounted_max(r, d, gamma):
    """discounted_max in PyTorch, a loop over time: no kernel."""
    m, after = torch.empty_like(r), torch.full(r.shape[:-1], float("-inf"), dtype=r.dtype, device=r.device)
    for t in reversed(range(r.shape[-1])):
        after = torch.where(d[..., t], r[..., t], torch.maximum(r[..., t], gamma * after))
        m[..., t] = after
    return m


def _torch_vtrace(log_rhos, r, v, nv, term, gamma, rho_bar, c_bar, chunk):
    """V-trace's (vs, pg) in PyTorch, a loop over time with selects (NaN-safe): no kernel."""
    ratio = log_rhos.exp()
    rho, cs = ratio.clamp(max=rho_bar), gamma * ratio.clamp(max=c_bar)
    nv0 = torch.where(term, 0.0, nv)
    b = v + rho * (r + gamma * nv0 - v)
    vs, carry = torch.empty_like(r), torch.zeros_like(r[:, 0])
    for t in reversed(range(r.shape[1])):
        end = term[:, t] | (t == r.shape[1] - 1)
        carry = torch.where(end, b[:, t], b[:, t] + cs[:, t] * (carry - nv0[:, t]))
        vs[:, t] = carry
    after = torch.where(term, 0.0, torch.cat([vs[:, 1:], nv[:, -1:]], 1))
    return vs, rho * (r + gamma * after - v)


PURE_TORCH = {  # the same functions in PyTorch, right on every case: a Triton newcomer's likeliest answer
    "td_target_kernel": lambda r, v, d, g: r + torch.where(d, 0.0, g * v),
    "block_scan": lambda r, g, last: _torch_returns(r, torch.zeros_like(r, dtype=torch.bool), g, last),
    "chunked_scan": lambda r, g, c: _torch_returns(r, torch.zeros_like(r, dtype=torch.bool), g),
    "reset_scan": lambda r, d, g, c: _torch_returns(r, d, g),
    "tiled_scan": lambda r, d, g, c, rows: _torch_returns(r, d, g),
    "gae_kernel": lambda r, v, nv, d, g, lam, c: _torch_returns(r + torch.where(d, 0.0, g * nv) - v, d, g * lam),
    "strided_scan": lambda r, d, g, c: _torch_returns(r.t(), d.t(), g).t(),
    "discounted_max": lambda r, d, g, c: _torch_discounted_max(r, d, g),
    "hooked_scan": lambda prologue, X, P, c: _torch_returns(X[0], X[1], P[0]) if len(X) == 2 else _torch_returns(
        X[0] + torch.where(X[3], 0.0, P[0] * X[2]) - X[1], X[3], P[0] * P[1]),  # the algorithm told by its inputs
    "two_stage_mean": lambda x: x.mean(),
    "awac_weights": lambda A, beta: A.numel() * torch.softmax(A / beta, 0),
    "vtrace_kernel": _torch_vtrace,
    "returns_autograd": lambda r, d, g: _torch_returns(r, d, g),  # autograd through the loop
}


def pure_python(name):
    """A kernel exercise's answer without Triton: PURE_TORCH's, or for a hook the solution's own
    Python without its @triton.jit."""
    return PURE_TORCH.get(name) or solution(name).fn


KERNELS = [n for n, _, kind in exercises.catalog() if kind == "kernel"]


@pytest.mark.parametrize("name", KERNELS)
def test_a_kernel_exercise_needs_a_kernel(name):
    """Every kind="kernel" exercise refuses an answer with no Triton of the student's in it, even
    a right one: the launcher exercises ask for a launch of their own kernel on every call, the
    hook exercises for a @triton.jit function, returns_autograd for an autograd.Function."""
    with pytest.raises(AssertionError, match=rf"^{name}(, [^:]*)?: (no Triton kernel of yours ran: this exercise asks "
                                             rf"you to write the kernel|.* is not a @triton\.jit function: this "
                                             rf"exercise asks for the Triton function|no torch\.autograd\.Function "
                                             rf"of yours ran)"):
        exercises.check(name, pure_python(name))


def test_the_no_kernel_message_names_the_function_as_a_name():
    """A round-70 review: a PyTorch-only answer named `atomic` read "... write the kernel ... and atomic to
    launch it"; the function's name is quoted as a name. A lambda has no name to quote."""
    def atomic(x):
        return x.mean()

    with pytest.raises(AssertionError, match="and your function `atomic` to launch it, not to compute"):
        exercises.check("two_stage_mean", atomic)
    with pytest.raises(AssertionError, match="and your function to launch it, not to compute"):
        exercises.check("two_stage_mean", lambda x: x.mean())


@triton.jit
def _returns_one_step_at_a_time(R, G, gamma, T):  # a Triton kernel, but a loop over the steps: no scan
    row = tl.program_id(0)
    carry = 0.0
    for i in range(0, T):
        t = T - 1 - i
        carry = tl.load(R + row * T + t) + gamma * carry
        tl.store(G + row * T + t, carry)


@triton.jit
def _add(x, y):
    return x + y


@triton.jit
def _returns_beside_a_dropped_scan(R, G, gamma, T, BLOCK: tl.constexpr):  # a scan runs; the loop answers
    row = tl.program_id(0)
    lanes = tl.arange(0, BLOCK)
    tl.associative_scan(tl.load(R + row * T + lanes, mask=lanes < T, other=0.0), 0, _add)
    _returns_one_step_at_a_time(R, G, gamma, T)


@triton.jit
def _max_one_step_at_a_time_times_a_scan(R, D, M, gamma, T, CHUNK: tl.constexpr):
    """discounted_max as a loop over the steps, a scan's sum tied in by 0 * it (the eighth teacher review)."""
    row = tl.program_id(0)
    dummy = tl.sum(tl.associative_scan(tl.zeros((CHUNK,), tl.float32), 0, _add), 0)
    y = float("-inf")
    for i in range(0, T):
        t = T - 1 - i
        r = tl.load(R + row * T + t)
        y = tl.where(tl.load(D + row * T + t) != 0, r, tl.maximum(r, gamma * y))
        tl.store(M + row * T + t, y + 0.0 * dummy)


@triton.jit
def _max_one_step_at_a_time_plus_a_decoy(R, D, M, gamma, T, CHUNK: tl.constexpr):
    """discounted_max as a loop over the steps, then a chunk loop adding a scan of zeros to what it stored (the
    ninth teacher review): the scan's result reaches the answer, but one element was loaded at a time."""
    row = tl.program_id(0)
    y = float("-inf")
    for i in range(0, T):
        t = T - 1 - i
        r = tl.load(R + row * T + t)
        y = tl.where(tl.load(D + row * T + t) != 0, r, tl.maximum(r, gamma * y))
        tl.store(M + row * T + t, y)
    for c in range(0, tl.cdiv(T, CHUNK)):
        t = c * CHUNK + tl.arange(0, CHUNK)
        x = tl.load(M + row * T + t, mask=t < T, other=0.0)
        tl.store(M + row * T + t, x + tl.associative_scan(x * 0.0, 0, _add), mask=t < T)


def _chunked_scan_loop_beside_a_scan(rewards, gamma, chunk):
    out = torch.empty_like(rewards)
    _returns_beside_a_dropped_scan[(rewards.shape[0],)](rewards, out, gamma, rewards.shape[1], BLOCK=chunk)
    return out


def _chunked_scan_step_by_step(rewards, gamma, chunk):
    out = torch.empty_like(rewards)
    _returns_one_step_at_a_time[(rewards.shape[0],)](rewards, out, gamma, rewards.shape[1])
    return out


def _torch_backward(ctx, grad):  # Triton forwards, PyTorch backwards
    (terminated,) = ctx.saved_tensors
    a = torch.cat([torch.zeros_like(grad[:, :1]), ctx.gamma * (~terminated[:, :-1]).to(grad.dtype)], 1)
    g, out = torch.zeros_like(grad[:, 0]), torch.empty_like(grad)
    for t in range(grad.shape[1]):
        g = grad[:, t] + a[:, t] * g
        out[:, t] = g
    return out


def _n_step_with_a_loop_over_time(rewards, next_values, terminated, gamma, n):
    B, T = rewards.shape
    G = torch.zeros_like(rewards)
    for t in range(T):
        g, disc = torch.zeros(B, device=rewards.device), 1.0
        alive = torch.ones(B, dtype=torch.bool, device=rewards.device)
        for s in range(t, min(t + n, T)):
            g = g + torch.where(alive, disc * rewards[:, s], 0.0)
            disc *= gamma
            alive = alive & ~terminated[:, s]
            if s == t + n - 1 or s == T - 1:  # (selected: next_values behind a termination may be NaN)
                g = g + torch.where(alive, disc * next_values[:, s], 0.0)
        G[:, t] = g
    return G


def _n_step_with(flags_past=0, window_test=True, counts_ends=True, bootstrap=True, no_zero_in_front=False,
                 from_t_minus_1=False):
    """n_step_returns' solution with a review's slip: ``flags_past`` 1 counts the terminations of
    t .. t + n, one flag too many (where step t + n terminates, S_t is kept whole, summed on to
    r_{t+n}, in place of the bootstrap), -1 those of t .. t + n - 2, one short (a termination at step
    t + n - 1 missed: the NaN next value behind it read through the where); ``window_test`` False leaves out its `t + n < T` test (where
    fewer than n steps are left, it takes the window's last step for the step n on); ``counts_ends``
    False counts no termination in the n steps (S_t - gamma^n (S_{t+n} - V) across an episode end);
    ``bootstrap`` False leaves out V(s_{t+n}) after the n steps (S_t - gamma^n S_{t+n}), the window's end's kept;
    ``no_zero_in_front`` takes the flags' cumsum without its 0 in front (ends[i] - ends[t] then counts
    t + 1 .. t + n: one step late); ``from_t_minus_1`` counts from ends[t - 1] (t - 1 .. t + n - 1, from one
    step early; at t = 0, ends[-1], the row's total)."""
    def n_step_returns(rewards, next_values, terminated, gamma, n):
        B, T = rewards.shape
        last = torch.zeros_like(rewards, dtype=torch.bool)
        last[:, -1] = True
        S = rl.linear_scan(gamma * (~terminated).to(rewards.dtype),
                           rewards + torch.where(last & ~terminated, gamma * next_values, 0.0))
        ends = torch.cumsum(torch.cat([torch.zeros(B, 1, device=rewards.device), terminated.to(rewards.dtype)], 1), 1)
        t = torch.arange(T, device=rewards.device)
        if no_zero_in_front:  # (Hint 4's ends without its F.pad: ends[:, i] - ends[:, t], i = min(t + n, T - 1))
            ends = torch.cumsum(terminated.to(rewards.dtype), 1)
            runs_on = ends[:, torch.clamp(t + n, max=T - 1)] - ends[:, t] == 0
        else:
            runs_on = ends[:, torch.clamp(t + n + flags_past, max=T)] - ends[:, t - 1 if from_t_minus_1 else t] == 0
        runs_on |= not counts_ends
        runs_on &= (t + n < T) if window_test else True
        S_n = torch.where(runs_on, S[:, torch.clamp(t + n, max=T - 1)], torch.zeros_like(S))
        V_n = torch.where(runs_on, next_values[:, torch.clamp(t + n - 1, max=T - 1)], torch.zeros_like(S))
        return S - gamma ** n * (S_n - (V_n if bootstrap else 0.0))
    return n_step_returns


def _chunked_reset_with(carry_at="first", select=True, multiply=False, order="last first", carry_in_out=False):
    """chunked_reset_scan's solution with a slip: ``carry_at`` "last" reads the carry at the chunk's last
    step; ``order`` "first first" walks the chunks forwards; ``multiply`` writes the reset as a = 0 (00b's
    product); ``select`` False reads the carry where K is set; ``carry_in_out`` records the carry handed on."""
    def chunked_reset_scan(a, b, reset, chunk):
        T = len(a)
        y, carry_in, carry = np.zeros(T), np.zeros(T), 0.0
        bounds = [(s, min(s + chunk, T)) for s in range(0, T, chunk)]
        for start, end in (bounds[::-1] if order == "last first" else bounds):
            run = (1.0, 0.0, False)  # (A, B, K) of the steps t + 1 .. end - 1
            for t in range(end - 1, start - 1, -1):
                if multiply:
                    a_t = 0.0 if reset[t] else a[t]
                    run = (a_t * run[0], b[t] + a_t * run[1], False)
                else:
                    run = (a[t], b[t], True) if reset[t] else (a[t] * run[0], b[t] + a[t] * run[1], run[2])
                y[t] = run[1] if run[2] and select else run[1] + run[0] * carry
                carry_in[t] = carry
            carry = y[start] if carry_at == "first" else y[end - 1]
            if carry_in_out:  # (the slip: carry_in set after the carry's update)
                carry_in[start:end] = carry
        return y, carry_in
    return chunked_reset_scan


def _n_step_multiplied(rewards, next_values, terminated, gamma, n):
    """The n-step return with its bootstrap multiplied by (1 - term) where a select belongs: right but for
    the NaN next values behind a termination."""
    B, T = rewards.shape
    G = torch.zeros_like(rewards)
    for t in range(T):
        g, disc, alive = torch.zeros(B, device=rewards.device), 1.0, torch.ones(B, device=rewards.device)
        for s in range(t, min(t + n, T)):
            g = g + alive * disc * rewards[:, s]
            disc *= gamma
            alive = alive * (~terminated[:, s]).float()
            if s == t + n - 1 or s == T - 1:
                g = g + alive * disc * next_values[:, s]
        G[:, t] = g
    return G


@triton.jit
def _finish_one_block(S, OUT, n_partials, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(OUT, tl.sum(tl.load(S + offs, mask=offs < n_partials, other=0.0), 0) / n)


def _two_stage_one_block(x):
    """two_stage_mean's solution with a finisher that adds one block of partials, not all of them."""
    partials_kernel = solution("two_stage_mean").__globals__["_partials"]
    n, BLOCK = x.numel(), 1024
    partials = torch.empty(triton.cdiv(n, BLOCK), dtype=torch.float32, device=x.device)
    out = torch.empty((), dtype=torch.float32, device=x.device)
    partials_kernel[(partials.numel(),)](x, partials, n, BLOCK=BLOCK)
    _finish_one_block[(1,)](partials, out, partials.numel(), n, BLOCK=1024)
    return out


@triton.jit
def _partials_other_one(X, S, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(S + tl.program_id(0), tl.sum(tl.load(X + offs, mask=offs < n, other=1.0), 0))  # padding adds 1 each


def _two_stage_other_one(x):
    """two_stage_mean's solution with other=1.0 in the first launch's load (a review's case: at n = 1 the
    mean is x_0 + 1023, which the hint blamed on memory no program wrote)."""
    n, BLOCK = x.numel(), 1024
    partials = torch.empty(triton.cdiv(n, BLOCK), dtype=torch.float32, device=x.device)
    out = torch.empty((), dtype=torch.float32, device=x.device)
    _partials_other_one[(partials.numel(),)](x, partials, n, BLOCK=BLOCK)
    solution("two_stage_mean").__globals__["_finish"][(1,)](partials, out, partials.numel(), n, BLOCK=1024)
    return out


def _two_stage_floor_grid(x, fill=0.0):
    """two_stage_mean's solution with n // BLOCK programs first: the last, partial block has none
    (a review's case; the partials sized the same way). ``fill``: what the partials' memory held before
    (torch.empty's leftovers, made deterministic)."""
    glob = solution("two_stage_mean").__globals__
    n, BLOCK = x.numel(), 1024
    partials = torch.full((max(n // BLOCK, 1),), fill, dtype=torch.float32, device=x.device)
    out = torch.empty((), dtype=torch.float32, device=x.device)
    glob["_partials"][(n // BLOCK,)](x, partials, n, BLOCK=BLOCK)
    glob["_finish"][(1,)](partials, out, partials.numel() if fill else n // BLOCK, n, BLOCK=1024)  # (the buffer's size)
    return out


def _n_step_loop_in_a_thread(rewards, next_values, terminated, gamma, n):
    """The loop over time run in a thread of its own (the eighth teacher review): counted there too."""
    import threading
    box = {}
    worker = threading.Thread(target=lambda: box.update(G=_n_step_with_a_loop_over_time(
        rewards, next_values, terminated, gamma, n)))
    worker.start()
    worker.join()
    return box["G"]


def _cleanrl_loop_execd():
    """CleanRL's loop over time, exec'd from a string (a review pasted it so: code with no file,
    which the step counter had taken for a library's generated code)."""
    ns = {"torch": torch}
    exec("def loop(rewards, values, dones, next_value, next_done, gamma, gae_lambda):\n"
         "    T, adv, last = rewards.shape[0], torch.zeros_like(rewards), 0\n"
         "    for t in reversed(range(T)):\n"
         "        nnt, nv = (1.0 - next_done, next_value) if t == T - 1 else (1.0 - dones[t + 1], values[t + 1])\n"
         "        delta = rewards[t] + gamma * nv * nnt - values[t]\n"
         "        adv[t] = last = delta + gamma * gae_lambda * nnt * last\n"
         "    return adv, adv + values\n", ns)
    return ns["loop"]


MISSING_REQUIREMENTS = [
    ("chunked_scan", "a loop over the steps in the kernel", _chunked_scan_step_by_step,
     r"your kernel ran no tl\.associative_scan"),
    ("strided_scan", "a contiguous copy, then the scan", lambda r, d, g, c: solution("strided_scan")(
        r.contiguous(), d.contiguous(), g, c), r"a transposed .*: your kernel read a copy of rewards, not rewards "
                                               r"itself"),
    ("strided_scan", "transposed to (B, T) and copied, then reset_scan", lambda r, d, g, c: solution("reset_scan")(
        r.t().contiguous(), d.t().contiguous(), g, c).t(), r"your kernel read a copy of rewards"),
    ("returns_autograd", "no autograd.Function: autograd through a loop", PURE_TORCH["returns_autograd"],
     r"no torch\.autograd\.Function of yours ran: this exercise asks for a subclass of torch\.autograd\.Function"),
    ("returns_autograd", "an autograd.Function whose backward is PyTorch",
     _returns_autograd_with(_torch_backward), r"your backward launched no Triton code of yours: it is the "
                                                    r"transposed scan"),
    ("lean_gae_loop", "CleanRL's loop as it is", _cleanrl_verbatim(),
     r"your loop runs 1\d(\.\d+)? tensor ops per step \(\d+ ops on a rollout of 16 steps, \d+ on one of 64\); the task "
     r"asks for at most 6"),
    ("n_step_returns", "a Python loop over time", _n_step_with_a_loop_over_time,
     r"a Python loop over time: your code ran \d+ Python lines and calls on a rollout of 16 steps and \d+ on one "
     r"of 64"),
    ("cleanrl_advantages", "CleanRL's loop, exec'd from a string", _cleanrl_loop_execd(),
     r"a Python loop over time: your code ran \d+ Python lines and calls on a rollout of 16 steps and \d+ on one "
     r"of 64"),
    ("n_step_returns", "a Python loop over time, in a thread", _n_step_loop_in_a_thread,
     r"a Python loop over time: your code ran \d+ Python lines and calls on a rollout of 16 steps and \d+ on one "
     r"of 64"),
]


@pytest.mark.parametrize("name,what,fn,why", MISSING_REQUIREMENTS,
                         ids=[f"{m[0]}: {m[1]}" for m in MISSING_REQUIREMENTS])
def test_what_the_task_asks_for_is_enforced(name, what, fn, why):
    """Right values, but not what the task asks for: refused, with a message that says what."""
    with pytest.raises(AssertionError, match=rf"^{name}[,:] .*{why}"):
        exercises.check(name, fn)


@pytest.mark.skipif(not exercises.INTERPRET, reason="the interpreter runs the kernel again with the scans' results "
                                                   "changed (compiled, the kernel's code is read for a scan)")
def test_a_scan_whose_result_is_dropped_is_no_scan():
    """A kernel that runs a tl.associative_scan and answers with a loop over the steps beside it:
    run again with the scans' results changed, it writes the same values, so it is refused."""
    # (a loop over the steps loads one element at a time: that is refused first where a check counts loads)
    refused = r"(your kernel ran a tl\.associative_scan, but its result never reaches the answer|your kernel loaded " \
              r"one element at a time)"
    with pytest.raises(AssertionError, match=rf"^chunked_scan, .*{refused}"):
        exercises.check("chunked_scan", _chunked_scan_loop_beside_a_scan)
    # the scan's result tied into the answer by 0 * it: a NaN would show through, a finite value does not
    tied = _variant("discounted_max", _max_one_step_at_a_time_times_a_scan, torch.zeros_like, {})
    with pytest.raises(AssertionError, match=rf"^discounted_max, .*{refused}"):
        exercises.check("discounted_max", tied)
    assert exercises.score("discounted_max", tied)[0] == 0
    with exercises._interpreting(poison_scans=True):  # the probe itself: what a scan returns is replaced
        assert (solution("chunked_scan")(torch.ones(1, 5), 0.5, 64) == 0.375).all()
    # a scan of zeros added to what a loop over the steps stored: it reaches the answer, but the loads were one
    # element each, a loop over the steps
    decoy = _variant("discounted_max", _max_one_step_at_a_time_plus_a_decoy, torch.zeros_like, {})
    with pytest.raises(AssertionError, match=r"^discounted_max, .*your kernel loaded one element at a time"):
        exercises.check("discounted_max", decoy)
    assert exercises.score("discounted_max", decoy)[0] == 0


def test_the_static_checks_for_a_compiled_kernel():
    """Compiled on a GPU there is no interpreter to count scans and atomics: the launched
    kernels' code (with the @triton.jit functions it calls) is read for them instead."""
    import types
    launch = types.SimpleNamespace
    assert "associative_scan" in exercises._kernel_reads([launch(kernel=_whole_row)])
    assert "associative_scan" in exercises._kernel_reads([launch(kernel=_reset_scan_variant)])
    assert "associative_scan" not in exercises._kernel_reads([launch(kernel=_returns_one_step_at_a_time)])
    assert "atomic_add" in exercises._kernel_reads([launch(kernel=_atomic_sum)])
    assert not {n for n in exercises._kernel_reads([launch(kernel=_one_program_sum)]) if n.startswith("atomic_")}


# ---- The answer is the kernel's: what it returns is what the student's kernel wrote ----------------
@triton.jit
def _does_nothing(X, OUT):
    pass


@triton.jit
def _one_scan(X, OUT, BLOCK: tl.constexpr):  # a tl.associative_scan whose result goes nowhere
    i = tl.arange(0, BLOCK)
    tl.associative_scan(tl.load(X + i, mask=i < 1, other=0.0), 0, _add)


@triton.jit
def _add(a, b):
    return a + b


@triton.jit
def _copy_first_half(SRC, OUT, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(OUT + i, tl.load(SRC + i, mask=i < n // 2, other=0.0), mask=i < n // 2)


def _td_torch(r, v, d, g):
    return r + torch.where(d, 0.0, g * v)


def _td_launch_that_does_nothing(r, v, d, g):
    out = torch.empty_like(r)
    _does_nothing[(1,)](r, out)
    return _td_torch(r, v, d, g)


def _td_kernel_then_copied_over(r, v, d, g):
    out = torch.empty_like(r)
    _does_nothing[(1,)](r, out)
    out.copy_(_td_torch(r, v, d, g))
    return out


def _td_half_a_kernel_then_patched_up(r, v, d, g):  # the kernel writes the first half, PyTorch the rest after
    right, out, n = _td_torch(r, v, d, g), torch.empty_like(r), r.numel()
    _copy_first_half[(triton.cdiv(n, 128),)](right, out, n, BLOCK=128)
    out[n // 2:] = right[n // 2:]
    return out


def _td_filled_by_torch_then_half_a_kernel(r, v, d, g):  # PyTorch writes first, the kernel half of it after
    out, n = _td_torch(r, v, d, g), r.numel()
    _copy_first_half[(triton.cdiv(n, 128),)](out.clone(), out, n, BLOCK=128)
    return out


def _td_filled_by_torch_then_a_launch(r, v, d, g):  # PyTorch's tensor passed to a kernel that stores nothing
    out = _td_torch(r, v, d, g)
    _does_nothing[(1,)](r, out)
    return out


def _reset_scan_torch_and_a_dummy_scan(r, d, g, c):
    _one_scan[(1,)](r, torch.empty_like(r), BLOCK=16)
    return _torch_returns(r, d, g)


def _two_stage_mean_two_launches_and_torch(x):
    out = torch.empty((), device=x.device)
    _does_nothing[(1,)](x, out)
    _does_nothing[(1,)](x, out)
    return x.double().mean()


def _two_stage_mean_item(x):
    return solution("two_stage_mean")(x).item()


def _returns_autograd_forward_in_torch(r, d, gamma):  # scan_hook launched, its result dropped
    class Returns(torch.autograd.Function):
        @staticmethod
        def forward(ctx, rewards, terminated, gamma):
            ctx.save_for_backward(terminated)
            ctx.gamma = gamma
            exercises.scan_hook(_returns_fwd, (rewards, terminated), (gamma,))
            return _torch_returns(rewards, terminated, gamma)

        @staticmethod
        def backward(ctx, grad):
            return solution_backward(ctx, grad), None, None

    return Returns.apply(r, d, gamma)


def solution_backward(ctx, grad):
    return exercises.scan_hook(_transposed_right, (grad.contiguous(), ctx.saved_tensors[0]), (ctx.gamma,),
                               reverse=False)


@triton.jit
def _transposed_right(X, P, offs, t, m, T):
    dy = tl.load(X[0] + offs, mask=m, other=0.0)
    done_before = tl.load(X[1] + offs - 1, mask=m & (t >= 1), other=1) != 0
    return _reset_where_zero(tl.where(done_before, 0.0, P[0]), dy)


_NOT_WRITTEN = r"the (tensor|result) you returned( \(the returns G\))? was not written by your kernel: "
_CHANGED = r"the tensor you returned was changed by PyTorch after your kernel wrote it"
NOT_THE_KERNEL_S = [  # right values, a kernel of the student's launched, but the answer is PyTorch's
    ("td_target_kernel", "a launch that does nothing, the result in PyTorch", _td_launch_that_does_nothing,
     _NOT_WRITTEN + "no launch of your kernel received its storage: PyTorch made it"),
    ("td_target_kernel", "a launch, then out.copy_(PyTorch's result)", _td_kernel_then_copied_over, _CHANGED),
    ("td_target_kernel", "half of it by the kernel, the rest patched up in PyTorch", _td_half_a_kernel_then_patched_up,
     _CHANGED),
    ("reset_scan", "a PyTorch loop and a dummy kernel running one tl.associative_scan",
     _reset_scan_torch_and_a_dummy_scan, _NOT_WRITTEN + "no launch of your kernel received its storage"),
    ("two_stage_mean", "two do-nothing launches, then x.double().mean()", _two_stage_mean_two_launches_and_torch,
     _NOT_WRITTEN + "no launch of your kernel received its storage"),
    ("two_stage_mean", "the kernel's result as a Python float (.item())", _two_stage_mean_item,
     _NOT_WRITTEN + r"it is a float, not the tensor your kernel stored into \(one number is a 0-d tensor"),
    ("returns_autograd", "a forward that launches scan_hook and returns PyTorch's returns",
     _returns_autograd_forward_in_torch, _NOT_WRITTEN + "no launch of your kernel received its storage"),
]
if exercises.INTERPRET:  # what the kernel's tl.store wrote is seen by the interpreter only
    NOT_THE_KERNEL_S += [
        ("td_target_kernel", "PyTorch's result passed to a kernel that stores nothing",
         _td_filled_by_torch_then_a_launch, _NOT_WRITTEN + r"its tl\.store calls wrote 0 of its 8 elements"),
        ("td_target_kernel", "PyTorch's result, half of it overwritten by a kernel",
         _td_filled_by_torch_then_half_a_kernel, _NOT_WRITTEN + r"its tl\.store calls wrote 4 of its 8 elements "
                                                                r"\(the first one never stored: index \(4,\)\)"),
    ]


@pytest.mark.parametrize("name,what,fn,why", NOT_THE_KERNEL_S, ids=[f"{m[0]}: {m[1]}" for m in NOT_THE_KERNEL_S])
def test_the_answer_must_be_what_the_student_s_kernel_wrote(name, what, fn, why):
    with pytest.raises(AssertionError, match=rf"^{name}, [^:]*: {why}"):
        exercises.check(name, fn)


@pytest.mark.parametrize("fn, wrong", [(_td_filled_by_torch_then_a_launch, "8 of its 8"),
                                       (_td_filled_by_torch_then_half_a_kernel, "4 of its 8")])
def test_a_result_poured_into_the_kernel_s_buffer_is_refused_as_compiled(monkeypatch, fn, wrong):
    """Compiled, no tl.store is recorded: the check runs the student's launches again (on new inputs)
    with the returned buffer replaced by a NaN-filled copy, and the kernel itself must write the
    answer. Checked here under the interpreter with its store record switched off (INTERPRET False:
    what a compiled check sees)."""
    monkeypatch.setattr(exercises, "INTERPRET", False)
    with pytest.raises(AssertionError, match=rf"^td_target_kernel, 8 elements: the tensor you returned was not written "
                                             rf"by your kernel: run again on new inputs with that buffer replaced by a "
                                             rf"NaN-filled copy, your kernel's launches left {wrong} elements NaN"):
        exercises.check("td_target_kernel", fn)


@pytest.mark.parametrize("name", ["td_target_kernel", "block_scan", "chunked_scan", "reset_scan", "gae_kernel",
                                  "hooked_scan", "strided_scan", "two_stage_mean", "awac_weights", "returns_autograd"])
def test_every_solution_passes_the_replay_on_every_case_as_compiled(monkeypatch, name):
    """Compiled, every case is replayed on new inputs (the NaN and inf cases, the transposed and sliced
    views, the two launches of two_stage_mean, both passes of returns_autograd): the solutions pass.
    Under the interpreter (test_solution_passes) only the cases of at most 256 elements are."""
    monkeypatch.setattr(exercises, "INTERPRET", False)
    assert exercises.check(name, solution(name)) is None


def test_a_view_of_what_the_kernel_wrote_is_its_answer():
    """A view (a slice, .view(), .t()) of the buffer the kernel wrote is still the kernel's."""
    s = solution("td_target_kernel")
    kernel = s.__globals__["_td_target"]

    def wider_buffer(r, v, d, g):  # the kernel writes into a buffer of 2n; the answer is its first half
        out, n = torch.empty(2 * r.numel(), dtype=r.dtype, device=r.device), r.numel()
        kernel[(triton.cdiv(n, 128),)](r, v, d, out, g, n, BLOCK=128)
        return out[:n]

    def reshaped(r, v, d, g):
        return s(r, v, d, g).view(1, -1).t().reshape(-1)

    assert exercises.check("td_target_kernel", wider_buffer) is None
    assert exercises.check("td_target_kernel", reshaped) is None


# ---- The kernel computes it: its launches, run again on new inputs, must recompute the answer --------
@triton.jit
def _copy(SRC, OUT, n, BLOCK: tl.constexpr):  # the 3-line copy kernel
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(OUT + i, tl.load(SRC + i, mask=i < n), mask=i < n)


@triton.jit
def _copy_and_scan_zeros(SRC, OUT, n, BLOCK: tl.constexpr):  # a copy, and a tl.associative_scan of zeros beside it
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    zeros = tl.associative_scan(tl.zeros([BLOCK], tl.float32), 0, _add)
    tl.store(OUT + i, tl.load(SRC + i, mask=i < n) + zeros, mask=i < n)


@triton.jit
def _copy_and_scan_zeros_with_the_views(SRC, OUT, R, D, n, BLOCK: tl.constexpr):  # R, D: received, never read
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    zeros = tl.associative_scan(tl.zeros([BLOCK], tl.float32), 0, _add)
    tl.store(OUT + i, tl.load(SRC + i, mask=i < n) + zeros, mask=i < n)


def _through(answer, kernel, block, *unused):
    """``answer`` copied into a fresh buffer by the student's own kernel."""
    answer = answer.contiguous()
    out, n = torch.empty_like(answer), answer.numel()
    kernel[(triton.cdiv(n, block),)](answer, out, *unused, n, BLOCK=block)
    return out


def _td_target_in_torch_through_a_copy_kernel(r, v, d, g):
    return _through(r + torch.where(d, 0.0, g * v), _copy, 128)


def _reset_scan_loop_through_a_copy_kernel(r, d, g, c):
    return _through(_torch_returns(r, d, g), _copy_and_scan_zeros, c)


def _gae_kernel_loop_through_a_copy_kernel(r, v, nv, d, g, lam, c):
    delta = r + torch.where(d, 0.0, g * torch.where(d, 0.0, nv)) - v
    return _through(_torch_returns(delta, d, g * lam), _copy_and_scan_zeros, c)


def _strided_scan_loop_through_a_copy_kernel(r, d, g, c):  # the views passed to the kernel: read in place, unused
    return _through(_torch_returns(r.t(), d.t(), g).t(), _copy_and_scan_zeros_with_the_views, c, r, d)


_UNWRAPPED = rl.discounted_returns.__wrapped__  # bound in a cell, before the check: the package's answer still


def _reset_scan_by_the_unwrapped_package(r, d, g, c):
    return _through(_UNWRAPPED(r, gamma=g, terminated=d, backend="triton"), _copy_and_scan_zeros, c)


def _reset_scan_by_the_package_s_kernel(r, d, g, c):  # its internals, named by no answer
    p, _ = rl_returns.prepare("discounted_return", r, None, None, None, g, 1.0, d, None, None, -1, "triton")
    return _through(rl_returns._run(p, True)[0], _copy_and_scan_zeros, c)


@pytest.mark.parametrize("fn,why", [
    (_reset_scan_by_the_unwrapped_package, r"reads rltriton_lite\.discounted_returns \(as _UNWRAPPED\), which is "
                                           r"the package's answer"),
    (_reset_scan_by_the_package_s_kernel, r"your function launched the package's own kernel \(rltriton_lite\.scan\."
                                          r"_scan_kernel\)")], ids=["__wrapped__", "its internals"])
def test_the_package_s_answer_through_a_copy_kernel_is_refused(fn, why):
    """The package's answer copied out by a kernel of the student's that scans zeros, reached by
    rl.discounted_returns.__wrapped__ bound before the check, or by the package's internals
    (episode.prepare, returns._run): refused, by name where the code names an answer, else because
    the package's kernel ran."""
    with pytest.raises(AssertionError, match=rf"^reset_scan, [^:]*: .*{why}"):
        exercises.check("reset_scan", fn)


def _two_stage_mean_in_torch_through_two_copies(x):
    answer = x.double().mean()
    partial, out = torch.empty(1, dtype=torch.float64, device=x.device), torch.empty((), device=x.device)
    _copy[(1,)](answer, partial, 1, BLOCK=2)
    _copy[(1,)](partial, out, 1, BLOCK=2)
    return out


@triton.jit
def _passed_through(X, P, offs, t, m, T):  # the pairs (0 * y, y): y_t = y, whatever y is
    y = tl.load(X[0] + offs, mask=m, other=0.0)
    return _reset_where_zero(0.0 * y, y)


def _returns_autograd_loops_through_scan_hook(torch_forward=True, torch_backward=True):
    class Returns(torch.autograd.Function):
        @staticmethod
        def forward(ctx, rewards, terminated, gamma):
            ctx.save_for_backward(terminated)
            ctx.gamma = gamma
            if not torch_forward:
                return exercises.scan_hook(_returns_fwd, (rewards, terminated), (gamma,))
            return exercises.scan_hook(_passed_through, (_torch_returns(rewards, terminated, gamma),), ())

        @staticmethod
        def backward(ctx, grad):
            if not torch_backward:
                return solution_backward(ctx, grad), None, None
            return exercises.scan_hook(_passed_through, (_torch_backward(ctx, grad),), (), reverse=False), None, None

    return lambda r, d, g: Returns.apply(r, d, g)


_STALE = (r"your kernel's launches, run again on new inputs, did not recompute the answer: the values came from "
          r"outside the kernel \(the tensor you returned: \d+ of its \d+ elements wrong, the first at [^:]*: expected "
          r"\S+ for the new inputs, got \S+, what it returned for the case's own inputs\)")
_STALE_HOOK = (r"your Triton code's launches \(scan_hook with your prologues\), run again on new inputs, did not "
               r"recompute the answer: the values came from outside the kernel \(the tensor you returned \({}\)")
COPIED_THROUGH_A_KERNEL = [  # the answer in PyTorch or a Python loop, copied into the output by a kernel of theirs
    ("td_target_kernel", "the answer in PyTorch, a 3-line copy kernel", _td_target_in_torch_through_a_copy_kernel,
     _STALE),
    ("reset_scan", "a Python loop with torch.where, a copy kernel that scans zeros",
     _reset_scan_loop_through_a_copy_kernel, _STALE),
    ("gae_kernel", "a Python loop with torch.where, a copy kernel that scans zeros",
     _gae_kernel_loop_through_a_copy_kernel, _STALE),
    ("discounted_max", "a Python loop, a copy kernel that scans zeros",
     lambda r, d, g, c: _through(_torch_discounted_max(r, d, g), _copy_and_scan_zeros, c), _STALE),
    ("strided_scan", "a Python loop, a copy kernel that scans zeros and receives the views unused",
     _strided_scan_loop_through_a_copy_kernel, _STALE),
    ("two_stage_mean", "x.double().mean(), then two copy launches", _two_stage_mean_in_torch_through_two_copies,
     _STALE),
    ("returns_autograd", "loops in PyTorch, fed to scan_hook through a prologue returning (0 * y, y)",
     _returns_autograd_loops_through_scan_hook(), _STALE_HOOK.format(r"the returns G")),
    ("returns_autograd", "the forward right, the backward's loop fed to scan_hook as (0 * g, g)",
     _returns_autograd_loops_through_scan_hook(torch_forward=False), _STALE_HOOK.format(r"dL/drewards")),
]


@pytest.mark.parametrize("compiled", [False, True], ids=["interpreted", "as compiled"])
@pytest.mark.parametrize("name,what,fn,why", COPIED_THROUGH_A_KERNEL,
                         ids=[f"{m[0]}: {m[1]}" for m in COPIED_THROUGH_A_KERNEL])
def test_an_answer_copied_through_a_kernel_is_refused(monkeypatch, compiled, name, what, fn, why):
    """Right values, a kernel of the student's that stores every element (and runs a
    tl.associative_scan, receives the inputs): all the earlier checks pass. Replayed on a second
    draw of the case written into the inputs, the copy kernel returns the old answer: refused, on the
    first case, interpreted and as compiled (INTERPRET False: no store record, every case replayed)."""
    monkeypatch.setattr(exercises, "INTERPRET", not compiled and exercises.INTERPRET)
    for seed in (None, 3):
        with pytest.raises(AssertionError, match=rf"^{name}, [^:]*: {why}"):
            exercises.check(name, fn, seed=seed)


def test_the_replay_puts_the_inputs_back_and_refreshes_copies_of_them():
    """The replay writes the new draw into the student's inputs in place and puts them back after;
    a copy of an input made before the launch (.clone(), .double()) is the input too: a right
    kernel that reads copies passes."""
    s = solution("td_target_kernel")
    seen = []

    def keeps_its_inputs(r, v, d, g):
        seen.append([(x, x.clone()) for x in (r, v, d)])
        return s(r, v, d, g)

    def reads_copies(r, v, d, g):
        out = torch.empty_like(r)
        s.__globals__["_td_target"][(triton.cdiv(r.numel(), 128),)](r.clone(), v.double(), d.clone(), out, g,
                                                                    r.numel(), BLOCK=128)
        return out

    assert exercises.check("td_target_kernel", keeps_its_inputs) is None
    assert len(seen) == len(exercises.cases("td_target_kernel"))
    assert all(torch.equal(torch.nan_to_num(x), torch.nan_to_num(before)) for case in seen for x, before in case)
    assert exercises.check("td_target_kernel", reads_copies) is None


# ---- More ways to the package's answer, refused ---------------------------------------------------
CHEAT = {"returns": rl.reference.discounted_returns}


def _reset_scan_from_a_dict(rewards, terminated, gamma, chunk):
    return torch.as_tensor(CHEAT["returns"](rewards.cpu().numpy(), gamma=gamma, terminated=terminated.cpu().numpy()))


def _gae_pairs_by_an_integration(rewards, values, next_values, terminated, truncated, gamma, lam):
    import rltriton_lite.integrations.openrlhf as openrlhf
    return 0, openrlhf.get_advantages_and_returns(values, rewards, torch.ones_like(terminated), gamma, lam)[0]


def _token_gae_pairs_by_verl_s_drop_in(rewards, values, mask, gamma, lam):
    adv, _ = verl_gae(rewards, values, mask, gamma, lam)
    return (~mask).to(adv.dtype), adv


def _gae_pairs_by_the_torch_path(rewards, values, next_values, terminated, truncated, gamma, lam):
    from rltriton_lite import _torch_path
    a = gamma * lam * (~(terminated | truncated)).to(rewards.dtype)
    b = rewards + gamma * (~terminated) * next_values - values
    return 0, _torch_path.linear_scan(a, b, None, None, -1, True)


def _vtrace_floor_bytes_from_the_cases(B, T, elem_bytes):
    return next(c[3] for seed in (None, 1, 2) for c in exercises.cases("vtrace_floor_bytes", seed)
                if c[1] == (B, T, elem_bytes))


MORE_BYPASSES = [
    ("reset_scan", _reset_scan_from_a_dict, r"write it yourself: your _reset_scan_from_a_dict reads "
                                            r"rltriton_lite\.reference\.discounted_returns \(as CHEAT\['returns'\]\), "
                                            r"which is the package's answer"),
    ("gae_pairs", _gae_pairs_by_an_integration, r"write it yourself: rltriton_lite\.integrations\.openrlhf\."
                                                r"get_advantages_and_returns is the package's answer"),
    ("token_gae_pairs", _token_gae_pairs_by_verl_s_drop_in, r"write it yourself: your "
                                                            r"_token_gae_pairs_by_verl_s_drop_in reads rltriton_lite\."
                                                            r"integrations\.verl\.compute_gae_advantage_return"),
    ("gae_pairs", _gae_pairs_by_the_torch_path, r"write it yourself: rltriton_lite\._torch_path\.linear_scan is the "
                                                r"package's answer \(of the package's functions, gae_pairs may call "
                                                r"only rltriton_lite\.linear_scan"),
    ("n_step_returns", lambda r, nv, term, g, n: torch.as_tensor(exercises._key(
        "n_step_returns", r.cpu().numpy(), nv.cpu().numpy(), term.cpu().numpy(), g, n)),
     r"write it yourself: rltriton_lite\.exercises\._key is the checker's own \(it computes the "
     r"expected values"),
    ("warp_sectors", lambda a, n: exercises._key("warp_sectors", a, n),
     r"rltriton_lite\.exercises\._key is the checker's own"),
    ("n_step_returns", lambda r, nv, term, g, n: torch.as_tensor(exercises._keys().n_step_returns(
        r.cpu().numpy(), nv.cpu().numpy(), term.cpu().numpy(), g, n)),
     r"rltriton_lite_keys\.n_step_returns is the checker's own"),
    ("segment_carries", lambda *args: exercises._segment_carries_reference(*args),
     r"rltriton_lite\.exercises\._segment_carries_reference is the checker's own"),
    ("launch_model", lambda *args: exercises._launch_model_reference(*args),
     r"rltriton_lite\.exercises\._launch_model_reference is the checker's own"),
    ("host_bound", lambda *args: exercises._host_bound_reference(*args),
     r"rltriton_lite\.exercises\._host_bound_reference is the checker's own"),
    ("vtrace_kernel", lambda *args: exercises._vtrace_reference(*(x.cpu().numpy() if torch.is_tensor(x) else x
                                                                  for x in args)),
     r"rltriton_lite\.exercises\._vtrace_reference is the checker's own"),
    ("vtrace_floor_bytes", _vtrace_floor_bytes_from_the_cases, r"rltriton_lite\.exercises\.cases is the checker's own"),
    ("vtrace_floor_bytes", lambda B, T, e: B * T * rl_profile.op("vtrace").bytes_per_step(e),
     r"rltriton_lite\.profile\.op is the package's answer"),
    ("vtrace_floor_bytes", lambda B, T, e: B * T * rl_profile.ops()["vtrace"].bytes_per_step(e),
     r"rltriton_lite\.profile\.ops is the package's answer"),
]


@pytest.mark.parametrize("name,fn,why", MORE_BYPASSES, ids=[f"{b[0]}-{i}" for i, b in enumerate(MORE_BYPASSES)])
def test_more_ways_to_the_package_s_answer_are_refused(name, fn, why):
    with pytest.raises(AssertionError, match=rf"^{name}, .*{why}"):
        exercises.check(name, fn)
    from rltriton_lite import _torch_path  # (restored after the check)
    from rltriton_lite.integrations import openrlhf
    assert _torch_path.linear_scan.__module__ == "rltriton_lite._torch_path" and not exercises._ACTIVE
    assert openrlhf.get_advantages_and_returns.__module__ == "rltriton_lite.integrations.openrlhf"


def test_the_expected_values_are_not_in_the_checker_s_frames():
    """While the student's function runs, no frame above it holds the case's expected value: the
    checker draws it again after the function returns."""
    names = []

    def vtrace_floor_bytes(B, T, elem_bytes):
        f = sys._getframe(1)
        while f is not None:
            names.extend(k for k, v in f.f_locals.items() if k == "expected" or isinstance(v, (np.ndarray, np.integer)))
            f = f.f_back
        return B * T * (6 * elem_bytes + 1)

    assert exercises.check("vtrace_floor_bytes", vtrace_floor_bytes) is None
    assert names == []


# ---- Hints: each part said only where it is true of the failing step --------------------------------
def _failure(name, fn):
    return _failure_seeded(name, fn, None)


def _failure_seeded(name, fn, seed):
    with pytest.raises(AssertionError) as e:
        exercises.check(name, fn, seed=seed)
    return str(e.value)


_WRONG_HINTS = ("Every element is wrong", "a truncation", "the window's last step", "in your combine",
                "the step after t", "at an episode end", "unmasked load")


def test_a_hint_at_an_ordinary_middle_step_names_only_that():
    s = solution("gae_pairs")

    def off_at_step_2(*args):
        a, b = s(*args)
        b = b.clone()
        b[..., 2] += 1.0  # one ordinary step wrong: the scan carries it to the steps before
        return a, b

    msg = _failure("gae_pairs", off_at_step_2)
    assert re.search(r"shape \(1, 5\): the error starts at the latest wrong step, index \(0, 2\)", msg), msg
    assert "Hint: An ordinary step" in msg and "its pair (a_t, b_t)" in msg, msg
    assert not [w for w in _WRONG_HINTS if w in msg.split("Hint:")[1]], msg  # gae_pairs has no combine


@pytest.mark.parametrize("name", ["n_step_returns", "lean_gae_loop", "cleanrl_advantages"])
def test_an_ordinary_step_hint_speaks_of_pairs_only_where_the_student_writes_them(name):
    """A review: n_step_returns (tensor ops), lean_gae_loop (a loop) and cleanrl_advantages (a call of
    rl.gae) have a scan's hint positions but no pairs (a_t, b_t) of the student's: the ordinary-step
    hint says what their code computes there instead."""
    s = solution(name)

    def off_at_one_step(*args):  # one ordinary step wrong (time is the last dim, or the first: time_dim)
        out = s(*args)
        first = (out[0] if isinstance(out, tuple) else out).clone()
        first[(3, 0) if name != "n_step_returns" else (0, 2)] += 1.0
        return (first, *out[1:]) if isinstance(out, tuple) else first

    msg = _failure(name, off_at_one_step)
    assert "Hint: An ordinary step" in msg and "(a_t, b_t)" not in msg and "in your combine" not in msg, msg


def test_a_hint_at_a_truncation_names_the_truncation_and_nothing_else():
    s = solution("gae_pairs")

    def trace_on_past_truncations(rewards, values, next_values, terminated, truncated, gamma, lam):
        return s(rewards, values, next_values, terminated, torch.zeros_like(truncated), gamma, lam)  # not cut

    msg = _failure("gae_pairs", trace_on_past_truncations)
    assert "truncations" in msg and ("Hint: that step is a truncation (it bootstraps from next_values, and the trace "
                                     "is cut: a reset).") in msg, msg
    hint = msg.split("Hint:")[1]
    assert not [w for w in ("Every element", "An ordinary step", "termination", "in your combine") if w in hint], msg


def test_only_the_ends_a_case_passes_are_marked():
    """gae_prologue's cases without truncations (or terminations) mark no step as one: a failure there
    must not be hinted as a truncation."""
    for case, args, kw, expected, marks in exercises.cases("gae_prologue"):
        for flag, label in (("terminated", exercises.TERM), ("truncated", exercises.TRUNC)):
            assert (flag in kw) == (label in marks), (case, label)


def test_no_every_element_hint_for_a_one_number_output():
    msg = _failure("vtrace_floor_bytes", lambda B, T, e: B * T * 6 * e)  # the flags forgotten: a scalar
    assert "your function returned 24, not the count expected" in msg and "25" not in msg and "Every element" not in msg and "ordinary" not in msg, msg
    assert "flag's byte per step is left out" in msg, msg


@pytest.mark.parametrize("fn,said", [(lambda B, T, e: B * T * (4 * e + 1), "That is GAE's count"),
                                     (lambda B, T, e: B * T * (5 * e + 1), "one of the two outputs"),
                                     (lambda B, T, e: B * T * 7 * e, "not elem_bytes"),
                                     (lambda B, T, e: B * T * 6 * e + 3, "count per step")])
def test_vtrace_floor_bytes_names_what_the_count_left_out(fn, said):
    assert said in _failure("vtrace_floor_bytes", fn)
    msg = _failure("matrix_compose", lambda p, q: (q[0] @ p[0], p[1] + q[0] @ p[1]))  # b wrong, n = 1: size 1
    assert "n=1, result 1 (b)" in msg and "(1 of 1 elements wrong)" in msg and "Every element" not in msg, msg
    msg = _failure("matrix_compose", lambda p, q: (p[0] @ q[0], p[1] + p[0] @ q[1]))  # q first: n = 1 still
    assert "Every element" not in msg, msg


@triton.jit
def _awr_doubled(X, P, offs, m):
    return 2.0 * tl.minimum(tl.exp(tl.load(X[0] + offs, mask=m, other=0.0) / P[0]), P[1])


def test_every_element_hint_where_every_element_of_several_is_wrong():
    msg = _failure("awr_weights", _awr_doubled)
    assert "Every element is wrong" in msg, msg


def test_the_padding_hint_only_where_padding_follows_the_last_step():
    """The padding mark is on a row's last step only where padding lanes can follow it (its length not a
    multiple of the block, or any block, None) and no episode end there cuts what they would compose into it."""
    done = np.zeros((2, 6), bool)
    done[1, -1] = True  # row 1 ends in an episode end: its padding lanes are cut off
    (at,) = exercises._padded_last_step(done, 4).values()
    assert at[:, -1].tolist() == [True, False] and not at[:, :-1].any()
    assert not next(iter(exercises._padded_last_step(done, 3).values())).any()  # 6 = 2 chunks of 3: no padding
    assert next(iter(exercises._padded_last_step(done, None).values()))[:, -1].tolist() == [True, False]


def test_matrix_compose_names_the_order_where_a_is_right_and_b_wrong():
    """At n = 1 A passes whatever its order (1 x 1 matrices commute): the hint says so, never that A is right."""
    order = "Hint: the b part is wrong (at n = 1 the A part cannot show its order, as 1 x 1 matrices commute: " \
            "larger cases check it): is q applied first?"
    for seed in (None, 3):
        for fn in (lambda p, q: (p[0] @ q[0], p[1] + p[0] @ q[1]),  # q first, then p (A commutes at n = 1)
                   lambda p, q: (q[0] @ p[0], q[1] + p[0] @ p[1])):  # b2 + A1 b1
            msg = _failure_seeded("matrix_compose", fn, seed)
            assert "result 1 (b)" in msg and order in msg and "A is right" not in msg, msg
    for seed in (None, 3):  # (a cold review of 00-00d: the swapped operands held back no fix, as other slips do)
        msg = _failure_seeded("matrix_compose", lambda p, q: (p[0] @ q[0], p[1] + p[0] @ q[1]), seed)
        assert "print(exercises.fix('matrix_compose'))" in msg and "A2 @ b1" not in msg, msg
        assert "b = A2 @ b1 + b2" in exercises.fix("matrix_compose"), exercises.fix("matrix_compose")
        msg = _failure_seeded("matrix_compose", lambda p, q: (q[0] @ p[0], q[1] + p[0] @ p[1]), seed)  # not a swap
        assert "A fix is held back" not in msg, msg
    msg = _failure("matrix_compose", lambda p, q: (p[0] @ q[0] + 1.0, q[1] + q[0] @ p[1]))  # A wrong: not said
    assert "result 0 (A)" in msg and order not in msg, msg
    for seed in (None, 3):  # A's product in the other order, b right: n = 1 passes, then A is wrong
        msg = _failure_seeded("matrix_compose", lambda p, q: (p[0] @ q[0], q[1] + q[0] @ p[1]), seed)
        assert "result 0 (A)" in msg and "matrices commute" in msg and "A2 @ A1" not in msg, msg
        assert "A2 @ A1" in exercises.fix("matrix_compose")  # the fix, held back


def test_dual_clip_says_which_side_of_the_advantage_is_wrong():
    msg = _failure("dual_clip", _dual_clip_both)
    assert "positive advantages" in msg and "those with A >= 0, and they hold the dual clip's value" in msg, msg
    assert exercises.fix("dual_clip").startswith("For A ≥ 0 the dual clip must not apply")
    assert "Every element" not in msg, msg
    msg = _failure("dual_clip", _plain_ppo)
    assert "negative advantages" in msg and "those with A < 0, and they hold PPO's plain loss" in msg, msg
    assert exercises.fix("dual_clip").startswith("For A < 0 the dual clip applies")
    msg = _failure("dual_clip", _dual_clip_negated)  # every element's sign wrong, not the dual clip: no side named
    assert "dual clip" not in msg.split("Hint:")[1] and "the answer with its sign flipped" in msg, msg


def test_ppo_clip_grad_names_where_the_gradient_must_flow():
    """Each slip's hint names it; the two answers that zero the gradient where it must flow get no credit (the
    regions 05's table lacks, a key case), nor does 0 at ties; the wrong side of A also gives a gradient where
    the clipped term is strictly smaller, said on the case that mixes both signs."""
    n = len(exercises.cases("ppo_clip_grad"))
    for fn in (_pcg_zero_outside, _pcg_wrong_side, _pcg_ties_zero, _pcg_ties_half, _pcg_no_ratio, _pcg_negated):
        assert exercises.score("ppo_clip_grad", fn) == (0, n), fn
    assert [ok for _, ok in exercises.checks("ppo_clip_grad", _pcg_zero_outside)] == [False, True, True, False]
    assert [ok for _, ok in exercises.checks("ppo_clip_grad", _pcg_ties_zero)] == [True, True, False, False]
    hint = exercises._ppo_clip_grad_hint
    ratio, adv, eps = exercises.cases("ppo_clip_grad")[3][1]
    expected = exercises.cases("ppo_clip_grad")[3][3]
    got = exercises.map_hook(_pcg_wrong_side, (ratio, adv), (eps,)).double().cpu().numpy()
    bad = ~np.isclose(got, expected, rtol=1e-5, atol=1e-6)
    said = hint((ratio, adv, eps), None, bad, got, expected)
    assert "the clip is on the wrong side of A's sign" in said, said
    got = exercises.map_hook(_pcg_zero_outside, (ratio, adv), (eps,)).double().cpu().numpy()
    bad = ~np.isclose(got, expected, rtol=1e-5, atol=1e-6)
    assert "wrong side" not in hint((ratio, adv, eps), None, bad, got, expected)


@pytest.mark.parametrize("eps", [0.2, 0.134])
def test_ppo_clip_grad_is_what_autograd_of_the_package_s_loss_gives(eps):
    """The checker's expected values at the edges of the clip range and at r = 1, both signs of A: the
    gradient of ppo_clip_loss(reduction="none") in log_probs (float64, log_probs nudged until exp gives the
    edge exactly), on both backends; eps = 0.134, whose float32 1 + eps depends on the order of rounding,
    is not drawn."""
    lo, hi = 1 - eps, 1 + eps
    ratio = np.array([lo, 1.0, hi, lo, 1.0, hi, 0.5, 1.5, 0.5, 1.5])
    adv = np.array([1.0, 1.0, 1.0, -1.0, -1.0, -1.0, 1.0, 1.0, -1.0, -1.0])
    log_r = np.log(ratio)
    for _ in range(4):  # exp(log r) == r exactly
        log_r = np.where(np.exp(log_r) < ratio, np.nextafter(log_r, np.inf),
                         np.where(np.exp(log_r) > ratio, np.nextafter(log_r, -np.inf), log_r))
    assert (np.exp(log_r) == ratio).all()
    for backend in ("triton", "torch"):
        lp = torch.tensor(log_r, device=DEVICE, requires_grad=True)
        loss = rl.ppo_clip_loss(lp, torch.zeros_like(lp), torch.tensor(adv, device=DEVICE), epsilon=eps,
                                reduction="none", backend=backend).loss
        (g,) = torch.autograd.grad(loss.sum(), lp)
        np.testing.assert_allclose(g.cpu().numpy(), np.where(np.clip(ratio, lo, hi) * adv < ratio * adv, 0.0,
                                                             -adv * ratio), rtol=1e-12)
    assert 0.2 in exercises._EXACT_EDGES and 0.134 not in exercises._EXACT_EDGES


@triton.jit
def _retrace_with(X, P, offs, t, m, T, CUT: tl.constexpr, LAM: tl.constexpr, SHIFT: tl.constexpr,
                  LAST: tl.constexpr, Q_SIGN: tl.constexpr = -1.0):
    """retrace's solution with one slip: CUT False (no min(1, .)), LAM False (no lambda), SHIFT (the
    ratio read one step on), LAST False (c not 0 at the window's last step)."""
    gamma, lam = P[0], P[1]
    r = tl.load(X[0] + offs, mask=m, other=0.0)
    expected_q = tl.load(X[1] + offs, mask=m, other=0.0)
    q = tl.load(X[2] + offs, mask=m, other=0.0)
    on = m & (t + SHIFT < T)
    ratio = tl.exp(tl.load(X[3] + offs + SHIFT, mask=on, other=0.0))
    term = tl.load(X[4] + offs, mask=m, other=0) != 0
    if LAST:
        more = t < T - 1
    else:
        more = t >= 0
    c = tl.where(more, (lam if LAM else 1.0) * (tl.minimum(ratio, 1.0) if CUT else ratio), 0.0)
    a = tl.where(term, 0.0, gamma * c)
    b = r + tl.where(term, 0.0, gamma * (expected_q + Q_SIGN * tl.where(more, c * q, 0.0)))
    return _reset_where_zero(a, b)


@triton.jit
def _retrace_uncut(X, P, offs, t, m, T):
    return _retrace_with(X, P, offs, t, m, T, False, True, 0, True)


@triton.jit
def _retrace_without_lambda(X, P, offs, t, m, T):
    return _retrace_with(X, P, offs, t, m, T, True, False, 0, True)


@triton.jit
def _retrace_one_step_on(X, P, offs, t, m, T):
    return _retrace_with(X, P, offs, t, m, T, True, True, 1, True)


@triton.jit
def _retrace_on_at_the_end(X, P, offs, t, m, T):
    return _retrace_with(X, P, offs, t, m, T, True, True, 0, False)


@triton.jit
def _retrace_q_added(X, P, offs, t, m, T):
    return _retrace_with(X, P, offs, t, m, T, True, True, 0, True, 1.0)


@triton.jit
def _retrace_carry_by_gamma_lam(X, P, offs, t, m, T):
    """retrace's solution whose multiplier a_t is gamma lam: the ratio in b_t's c only (a round-74 review's case)."""
    a, b, reset = _retrace_with(X, P, offs, t, m, T, True, True, 0, True)
    term = tl.load(X[4] + offs, mask=m, other=0) != 0
    return tl.where(term | (t >= T - 1), 0.0, P[0] * P[1]), b, reset


def test_retrace_names_a_multiplier_without_the_ratio():
    msg = _failure("retrace", _retrace_carry_by_gamma_lam)
    assert "These are Retrace's targets with the multiplier a_t = gamma lam" in msg, msg
    assert exercises.fix("retrace").startswith("a_t = gamma (1 - term_t) c_{t+1}, the c_{t+1} of b_t"), \
        exercises.fix("retrace")


def test_retrace_names_the_sign_of_the_taken_action_s_value():
    """c Q(s_{t+1}, a_{t+1}) added where it is subtracted: named (the fifth review's case)."""
    msg = _failure("retrace", _retrace_q_added)
    assert "These are Retrace's targets with c Q(s_{t+1}, u_{t+1}) added" in msg and "that step is" not in msg, msg


@pytest.mark.parametrize("slip,said", [(_retrace_uncut, "the ratio is not cut at 1"),
                                       (_retrace_without_lambda, "the trace lacks lambda"),
                                       (_retrace_one_step_on, "the ratio of the wrong step"),
                                       (_retrace_on_at_the_end, "the trace is not 0 at the window's last step")],
                         ids=["uncut", "without lambda", "one step on", "on at the end"])
def test_retrace_names_the_slip_in_its_trace(slip, said):
    msg = _failure("retrace", slip)
    assert f"These are Retrace's targets with a wrong trace: {said}" in msg, msg


@pytest.mark.parametrize("fn,which", [(_transposed_no_shift, "a_t, step t's own"),
                                      (_transposed_wrong_shift, "a_{t+1}, the step after")], ids=["a_t", "a_t+1"])
def test_transposed_scan_names_the_step_of_its_multiplier(fn, which):
    msg = _failure("transposed_scan", fn)
    assert f"Your multiplier is {which}, where the transposed scan's recurrence is g_t = dy_t + a_{{t-1}} g_{{t-1}}." \
        in msg, msg
    assert exercises.fix("transposed_scan") == "Load a at offs - 1, only where t >= 1."


def test_n_step_returns_names_a_bootstrap_read_one_step_late():
    """The solution given next_values one step on (V(s_{t+n}) read as next_values[t + n]): the
    hint names it, whatever the shifted values' padding makes of the last steps."""
    s = solution("n_step_returns")
    msg = _failure("n_step_returns", lambda r, nv, d, g, n: s(r, shift_left(nv), d, g, n))
    assert "the bootstrap is read one step late." in msg and "next_values[t + n - 1]" not in msg, msg
    assert exercises.fix("n_step_returns").startswith("V(s_{t+n}) is next_values[t + n - 1]")


@pytest.mark.parametrize("slip,said", [(dict(stops=False), "the sums run on past a termination"),
                                       (dict(bootstraps=False), "no bootstrap after the n steps"),
                                       (dict(window_end=False), "no bootstrap at the window's end")], ids=str)
def test_n_step_returns_names_the_slip(slip, said):
    stops, bootstraps, window_end = (slip.get(k, True) for k in ("stops", "bootstraps", "window_end"))

    def n_step_returns(rewards, next_values, terminated, gamma, n):  # a loop (refused later), with the slip
        r, nv, term = (x.detach().cpu().double().numpy() for x in (rewards, next_values, terminated))
        G = np.zeros_like(r)
        T = r.shape[-1]
        for row, t in np.ndindex(r.shape):
            disc = 1.0
            for s in range(t, min(t + n, T)):
                G[row, t] += disc * r[row, s]
                disc *= gamma
                if term[row, s] and stops:
                    break
                if (s == t + n - 1 and bootstraps) or (s == T - 1 and s != t + n - 1 and window_end):
                    G[row, t] += disc * nv[row, s]
        return torch.as_tensor(G, dtype=rewards.dtype, device=rewards.device)
    msg = _failure("n_step_returns", n_step_returns)
    assert f"This is the n-step return with a slip: {said}" in msg, msg


def test_reset_scan_says_the_carry_is_not_read_where_the_composed_reset_flag_is_set():
    for seed in (None, 3):
        msg = _failure_seeded("reset_scan", _reset_scan_with(CARRY_READ=True), seed)
        assert "within and across chunks" in msg and "with the composed reset flag set (an episode end at or after " \
            "it in its chunk: does your G_t read the carry there?). A factor 0 on the carry" in msg, msg
        assert exercises.fix("reset_scan").startswith("Where the composed reset flag is set, G_t must not read the "
                                                      "carry")
    msg = _failure("reset_scan", reset_scan_by_product)  # one chunk: no carry, not said
    assert "one chunk" in msg and "composed reset flag" not in msg, msg


def test_reset_scan_names_a_zero_discount_at_the_end_read_with_the_carry(tmp_path):
    """Round 58's slip: a_t = gamma * (1 - term) with the select combine, the carry read without a select:
    A_t is 0 where the reset flag is set, and 0 * a NaN carry is NaN."""
    fn = with_edits("reset_scan", [
        ("a = tl.where(m, gamma, 1.0)", "a = tl.where(m, tl.where(term, 0.0, gamma), 1.0)"),
        ("g = tl.where(k_s, b_s, b_s + a_s * carry)", "g = b_s + a_s * carry")], tmp_path)
    msg = _failure("reset_scan", fn)
    assert "does your G_t read the carry there?). A factor 0 on the carry does not keep out a NaN or inf carry, " \
        "whether A_t is 0 (a_t = gamma * (1 - term))" in msg, msg


def test_score_counts_the_checks_passed():
    """exercises.score, for partial credit: a right answer passes every check, a wrong one fewer
    (vtrace_fixed_point's V^pi is right where nothing is clipped), and a probe of the whole function
    is one more check. Wrong on a key case, the bug the exercise is about, none: gae_pairs ignoring
    truncations (wrong where the NaN next values are), n_step_returns ignoring terminations (right
    on the cases without one, wrong on those with NaN next values behind them), chunked_scan
    without its carry (right on one chunk); and none where a rule of the task is broken
    (n_step_returns' Python loop over time: every case right, the probe not)."""
    (v_pi,) = [f for w, f in wrong_answers("vtrace_fixed_point") if w.startswith("V^pi")]
    assert exercises.score("vtrace_fixed_point", v_pi) == (1, len(exercises.cases("vtrace_fixed_point")))
    n = len(exercises.cases("gae_pairs")) + 1  # its cases and the probe (pairs that do the scan)
    assert exercises.score("gae_pairs", solution("gae_pairs")) == (n, n)
    (ignores,) = [f for w, f in wrong_answers("gae_pairs") if w == "truncation ignored"]
    assert exercises.score("gae_pairs", ignores) == (0, n)
    assert exercises.score("chunked_scan", _chunked_with(NO_CARRY=True)) == (0, len(exercises.cases("chunked_scan")))
    n = len(exercises.cases("n_step_returns")) + 1  # its cases and the probe
    (ignores,) = [f for w, f in wrong_answers("n_step_returns") if w == "ignores terminations"]
    assert exercises.score("n_step_returns", ignores) == (0, n)
    assert [ok for _, ok in exercises.checks("n_step_returns", ignores)] == \
        ["terminations" not in c[0] for c in exercises.cases("n_step_returns")] + [True]
    assert exercises.score("n_step_returns", solution("n_step_returns")) == (n, n)
    assert exercises.score("n_step_returns", _n_step_with_a_loop_over_time) == (0, n)  # a rule broken: none
    with pytest.raises(AssertionError):
        exercises.check("n_step_returns", _n_step_with_a_loop_over_time)
    n = len(exercises.cases("dual_clip"))  # the dual clip on positive advantages too: right where A < 0, no credit
    assert exercises.score("dual_clip", _dual_clip_both) == (0, n)
    assert [ok for _, ok in exercises.checks("dual_clip", _dual_clip_both)] == [False, True, False]
    (first_byte,) = [f for w, f in wrong_answers("warp_sectors") if "first byte" in w]  # wrong only where loads cross
    assert [ok for _, ok in exercises.checks("warp_sectors", first_byte)] == \
        ["crossing" not in c[0] for c in exercises.cases("warp_sectors")]
    assert exercises.score("warp_sectors", first_byte) == (0, len(exercises.cases("warp_sectors")))


@pytest.mark.parametrize("slip, said", [
    ("first byte", "a load whose bytes cross a sector boundary touches two"),
    ("lanes counted", "that is the number of lanes"),
    ("bytes asked for", "that is the bytes asked for / 32"),
    ("distinct addresses", "(or of distinct addresses)"),
    ("one too many", "that counts one byte too many"),
    ("first and last sectors", "that counts each load's first and last sectors only")])
def test_warp_sectors_names_each_usual_slip(slip, said):
    """A one-number answer has no step to point at: warp_sectors says which slip gives the number
    the answer returned, the load across a sector boundary above all (the task's point)."""
    (fn,) = [f for w, f in wrong_answers("warp_sectors") if slip in w]
    with pytest.raises(AssertionError, match=r"(?s)\nHint: .*" + re.escape(said)):
        exercises.check("warp_sectors", fn)
    assert exercises._sectors_hint(np.arange(0, 128, 4), 4, 4, 4) is None  # the right count is no slip


@pytest.mark.parametrize("name, wrong, said", [
    ("block_scan", lambda: dict(wrong_answers("block_scan"))["a forward scan"], "Your scan runs forwards"),
    ("chunked_scan", lambda: dict(wrong_answers("chunked_scan"))["the combine's operands in the wrong order ((a2, b2) "
                                                                  "applied first)"],
     "Your combine applies the two maps in the wrong order")])
def test_a_scan_in_the_wrong_direction_or_order_is_named_so(name, wrong, said):
    """A forward scan, or a combine with its operands swapped, is said to be one, in place of the step's
    marks (the window's end, the padding), which would point elsewhere."""
    with pytest.raises(AssertionError) as e:
        exercises.check(name, wrong())
    hint = str(e.value).split("Hint: ")[1]
    assert hint.startswith(said) and "that step is" not in hint, hint


@pytest.mark.skipif(not exercises.INTERPRET, reason="the interpreter runs the combine on two maps; compiled, "
                    "the values name the step (test_tiled_scan's wrong answers)")
def test_tiled_scan_names_a_swapped_combine_on_every_case():
    """A review's case: tiled_scan with its combine's operands swapped was pointed at the window's last
    step, where its values first went wrong; the combine is named now, whatever the case."""
    with pytest.raises(AssertionError) as e:
        exercises.check("tiled_scan", _tiled_with(SWAPPED=True))
    hint = str(e.value).split("Hint: ")[1]
    assert hint.startswith("Your combine applies the two maps in the wrong order") and "window's last" not in hint, hint


def test_an_order_slip_is_named_by_the_combine_where_the_values_cannot_tell_it():
    """On reset_scan's first case (one NaN after an episode end), a swapped combine and an episode end
    multiplied by 0 give the same values, NaN everywhere before the bad reward. Under the interpreter the
    checker tries the student's combine on two maps, so the swapped one is named (the fourth review's case)
    and the NaN's hint left out; compiled, the values alone cannot tell, and the NaN's hint stands. The
    multiplied one is never named an order slip."""
    with pytest.raises(AssertionError) as e:
        exercises.check("reset_scan", _reset_scan_with(SWAPPED=True))
    hint = str(e.value).split("Hint: ")[1]
    if exercises.INTERPRET:
        assert hint.startswith("Your combine applies the two maps in the wrong order") and "NaN" not in hint, hint
    else:
        assert "wrong order" not in hint and "must be selected away" in hint, hint
    with pytest.raises(AssertionError) as e:
        exercises.check("reset_scan", reset_scan_by_product)
    assert "wrong order" not in str(e.value) and "runs forwards" not in str(e.value), str(e.value)
    assert "must be selected away" in str(e.value)


def _wrong(name, fn, interpreted):
    """fn fails name's check; under the interpreter with a message matching ``interpreted`` (compiled, the
    interpreter's probes do not run: the values are what is wrong)."""
    with pytest.raises(AssertionError, match=interpreted if exercises.INTERPRET else None):
        exercises.check(name, fn)


def test_a_combine_that_is_not_associative_is_named_on_a_short_row_too():
    """reset_scan's first case is one row of 8 to 16 steps in a chunk of 64: most of the scan's lanes are
    padding, the identity, with which any combine agrees. The probe draws from the real steps and the
    scan's composed runs at them, so a combine that drops a1 is named there (the third review's case)."""
    _wrong("reset_scan", _reset_scan_with(DROPS_A1=True), interpreted=r"^reset_scan, a NaN after an episode end, "
           r"one chunk, shape \(1, \d+\), chunk 64: your combine is not associative")


def test_a_combine_that_drops_a_reset_is_told_to_check_the_flag_and_shown_no_nan():
    """A later review's case: a combine whose flag is k2, not k1 | k2, is not associative. The message
    named the a part, on a triple holding a NaN; it now says that the flag lost a reset (the student's
    combine on RESET_FIRST), with that one example (a round-4 review found two, the random triples'
    too, hard to read). Where no slip is known, p, q and s are drawn from finite steps."""
    _wrong("reset_scan", _reset_scan_with(FLAG_K2=True), interpreted=r"^reset_scan, .*your combine is not "
           r"associative\. Its flag part turned a reset off: the run \(0\.5, 1, True\)")
    if exercises.INTERPRET:  # one example, the known slip's: no random triples beside it
        assert " for p = " not in _failure("reset_scan", _reset_scan_with(FLAG_K2=True))
    _wrong("reset_scan", _reset_scan_with(DROPS_A1=True), interpreted=r"^reset_scan, .*not associative: result \d of "
           r"\(p ⊕ q\) ⊕ s is .*\(⊕: (?!.*flag part)")
    if exercises.INTERPRET:  # p, q and s drawn from finite steps
        shown = _failure("reset_scan", _reset_scan_with(DROPS_A1=True)).split(" for p = ")[1].split("(⊕:")[0]
        assert "nan" not in shown and "inf" not in shown, shown


@pytest.mark.skipif(not exercises.INTERPRET, reason="the interpreter's error for a list (compiled, Triton says it "
                                                   "otherwise)")
def test_a_list_passed_to_a_kernel_is_told_to_be_a_tuple():
    """A review's case: hooked_scan with X = [x.contiguous() for x in inputs] got the interpreter's
    "'torch.dtype' object has no attribute 'is_ptr'" and the operators' reminder."""
    kernel = solution("hooked_scan").__globals__["_hooked_scan"]

    def hooked_scan(prologue, inputs, params, chunk, initial=0.0):
        X = [x.contiguous() for x in inputs]
        y = torch.empty(X[0].shape, dtype=torch.float32, device=X[0].device)
        kernel[(X[0].shape[0],)](X, tuple(float(p) for p in params), y, X[0].shape[1], initial, PROLOGUE=prologue,
                                 CHUNK=chunk)
        return y
    with pytest.raises(RuntimeError, match=r"A list passed to a kernel: Triton takes a tuple"):
        exercises.check("hooked_scan", hooked_scan)

    def params_as_a_list(prologue, inputs, params, chunk, initial=0.0):  # (a later review's: Triton refuses it)
        X = tuple(x.contiguous() for x in inputs)
        y = torch.empty(X[0].shape, dtype=torch.float32, device=X[0].device)
        kernel[(X[0].shape[0],)](X, [float(p) for p in params], y, X[0].shape[1], initial, PROLOGUE=prologue,
                                 CHUNK=chunk)
        return y
    with pytest.raises(AssertionError, match=r"argument of type: list\n\(A list passed to a kernel: Triton takes a "
                                             r"tuple") as e:
        exercises.check("hooked_scan", params_as_a_list)
    assert "tl.where" not in str(e.value)  # (the operators' reminder is for other errors)


@pytest.mark.skipif(not exercises.INTERPRET, reason="which elements were stored is known under the interpreter")
def test_a_kernel_that_stores_nothing_is_told_so_first():
    """A later review's case: td_target_kernel on a grid of n // BLOCK programs (0 where n < BLOCK) got
    a hint about the first element's episode end, the stores' note after it; now the note alone."""
    kernel = solution("td_target_kernel").__globals__["_td_target"]

    def td_target_kernel(rewards, next_values, terminated, gamma):
        out = torch.empty_like(rewards)
        n = rewards.numel()
        kernel[(n // 128,)](rewards, next_values, terminated, out, gamma, n, BLOCK=128)
        return out
    with pytest.raises(AssertionError) as e:
        exercises.check("td_target_kernel", td_target_kernel)
    said = str(e.value).split("\nHint: ")[1]
    assert said.startswith("Your kernel's tl.store calls wrote none of the 8 elements") and "episode end" not in said


def test_a_combine_that_returns_fewer_values_than_it_scans_is_told_so():
    """A review's case: a combine returning (a, b) for a scan of (a, b, k) ran in the interpreter and
    gave NaN, with a hint about masks; it is now named before any value. (Compiled, Triton's compiler
    refuses such a combine itself.)"""
    two_out = _reset_scan_with(TWO_OUT=True)
    with pytest.raises(AssertionError if exercises.INTERPRET else Exception) as e:
        exercises.check("reset_scan", two_out)
    if exercises.INTERPRET:
        assert re.search(r"^reset_scan, .*: your combine returns 2 value\(s\) for a scan of 3 blocks\. "
                         r"tl\.associative_scan calls it with 6 values", str(e.value)), str(e.value)
    exercises.check("reset_scan", solution("reset_scan"))  # three values for three blocks: no such note


def test_a_combine_that_selects_on_k1_for_k2_is_told_so():
    """A review's case: the solution's select with k1 in place of k2 is not associative, and the message
    said only that; it now says the combine selects on k1 (the student's combine on RESET_FIRST came out
    as the second run alone), with the fix held back."""
    _wrong("reset_scan", _reset_scan_with(K1_FOR_K2=True), interpreted=r"^reset_scan, .*your combine is not "
           r"associative\. The likely cause is a select on k1: the run \(0\.5, 1, True\), then the run "
           r"\(0\.25, 2, False\), came out as the second run alone")
    if exercises.INTERPRET:  # the last check's fix
        assert "Select on k2" in exercises.fix("reset_scan")


def test_a_combine_that_is_not_associative_is_named_as_the_bug():
    """A combine right only where a run meets one step (as Triton's own interpreter, a fold, would
    apply it) gives other values where a scan's tree combines runs with runs (a GPU's; the interpreter's
    as the package runs it). The checker tries the student's combine on the scan's own elements, both
    groupings: the combine is named as the bug, before the values (compiled, the values are wrong)."""
    one_step = _variant("discounted_max", _discounted_max_one_step_combine, torch.zeros_like, {})
    _wrong("discounted_max", one_step, interpreted=r"^discounted_max, .*your combine is not associative: result 1 of "
           r"\(p ⊕ q\) ⊕ s is .* groups the steps in a tree")
    assert exercises.score("discounted_max", one_step)[0] == 0
    exercises.check("discounted_max", solution("discounted_max"))  # an associative combine passes the probe


@pytest.mark.parametrize("decay, discount, said", [
    ("lam", "gamma", "decays by λ per step, not γλ"), ("gamma", "gamma", "decays by γ per step, not γλ"),
    ("one", "gamma", "does not decay"), ("zero", "gamma", "stops at every step"),
    ("gamma_lam", "one", "δ_t has no γ on V(s_{t+1})")])
def test_gae_kernel_names_a_wrong_trace_decay(decay, discount, said):
    """An ordinary step wrong everywhere says little; gae_kernel's usual slips (the multiplier a_t or
    the discount in δ_t) are recognised and named, and none is named for the right answer."""
    for case, args, _, expected, *_ in exercises.cases("gae_kernel"):
        r, v, nv, term, gamma, lam, _ = exercises._as_numpy(tuple(args))
        value = dict(lam=lam, gamma=gamma, one=1.0, zero=0.0, gamma_lam=gamma * lam)
        with np.errstate(all="ignore"):
            delta = r + np.where(term, 0.0, value[discount] * nv) - v
            got = rl.reference.linear_scan(np.where(term, 0.0, value[decay]), delta)
        assert said in exercises._gae_kernel_hint(args, None, None, got, expected), case
        assert exercises._gae_kernel_hint(args, None, None, expected, expected) is None


def _segment_map_multiplied(rewards, values, terminated, next_first_value, gamma, lam):
    A, _, reset = solution("gae_segment_map")(rewards, values, terminated, next_first_value, gamma, lam)
    v_next = np.concatenate([values[:, 1:], next_first_value[:, None]], axis=1)
    delta = rewards + (1 - terminated) * gamma * v_next - values  # 0 * NaN behind a termination
    B = np.zeros(rewards.shape[0])
    for t in reversed(range(rewards.shape[1])):
        B = np.where(terminated[:, t], delta[:, t], delta[:, t] + gamma * lam * B)
    return A, B, reset


def _carries_multiplied(A, B, reset, initial):
    out, c = np.empty(A.shape), initial.copy()
    for s in reversed(range(A.shape[1])):
        out[:, s], c = c, B[:, s] + (1 - reset[:, s]) * A[:, s] * c  # 0 * NaN behind a reset
    return out


def _token_pairs_multiplied(rewards, values, mask, gamma, lam):
    a, b = solution("token_gae_pairs")(rewards, torch.where(mask, values, 0.0), mask, gamma, lam)
    return a, b * mask + 0 * values  # a masked token's NaN value multiplied by 0


@pytest.mark.parametrize("name, fn, own", [
    ("gae_segment_map", _segment_map_multiplied, "delta = rewards + np.where(terminated, 0.0, gamma * v_next) - values"),
    ("segment_carries", _carries_multiplied, "np.where(reset[:, s], B[:, s], B[:, s] + A[:, s] * c)"),
    ("token_gae_pairs", _token_pairs_multiplied, "torch.where(mask, values, 0.0) and torch.where(mask, delta, 0.0)")])
def test_a_product_with_0_is_fixed_in_the_exercise_s_own_names(name, fn, own):
    """A review: the NaN of a product with 0 got GAE's fix in Triton's names (segment_carries) or no fix at all
    (gae_segment_map, token_gae_pairs); each now holds back a select in its own names."""
    msg = _failure(name, fn)
    assert "NaN" in msg and own not in msg and own in exercises.fix(name), (msg, exercises.fix(name))


@pytest.mark.parametrize("name", ["lean_gae_loop", "cleanrl_advantages", "launch_model", "vtrace_kernel"])
def test_results_returned_in_the_wrong_order_are_named(name):
    """A review: lean_gae_loop's and cleanrl_advantages' (returns, advantages) got "every element is wrong"."""
    fn = solution(name)

    def swapped(*args, **kw):
        out = fn(*args, **kw)
        return (out[1], out[0], *out[2:])
    results = exercises._get(name).results
    msg = _failure(name, swapped)
    assert f"your results 0 and 1 are swapped: result 0 holds {results[1]}" in msg and msg.endswith(
        f"return ({', '.join(results)})"), msg


def test_host_bound_names_the_shape_s_rows_alone():
    """A review: returning the answer's B, not B * T, got only "The answer is 64x16384"."""
    fn = solution("host_bound")

    def rows_only(rows, algorithm, pass_):
        n = fn(rows, algorithm, pass_)
        return next((r["B"] for r in rows if r["B"] * r["T"] == n), n)
    assert "Yours is the answer's B alone: return its elements, B * T." in _failure("host_bound", rows_only)


def test_a_pair_whose_product_is_the_answer_is_told_to_multiply():
    """A review: host_bound returning the shape (B, T) got only "expected one number"."""
    fn = solution("host_bound")

    def shape(rows, algorithm, pass_):
        n = fn(rows, algorithm, pass_)
        return next(((r["B"], r["T"]) for r in rows if r["B"] * r["T"] == n), (n, 1))
    with pytest.raises(AssertionError, match=r"^host_bound, .*expected one number, .*multiply to the answer; "
                                             r"return their product"):
        exercises.check("host_bound", shape)
    with pytest.raises(AssertionError, match=r"expected one number, your function returned a tuple of 2$"):  # no product
        exercises.check("host_bound", lambda *a: (fn(*a), "rows"))


def test_tiled_scan_asks_for_a_tile_of_rows_per_program():
    """Right values from one program per row (reset_scan's kernel), or from a tile whose rows are scanned
    one at a time, break the task's rule: a (ROWS, CHUNK) tile per program, one scan along axis 1."""
    reset = solution("reset_scan")
    per_row = lambda r, d, g, c, rows: reset(r, d, g, c)  # noqa: E731
    with pytest.raises(AssertionError, match=r"^tiled_scan, .*your kernel ran on 4 programs where 4 rows in tiles "
                                             r"of rows=4 make 1: launch one program per tile"):
        exercises.check("tiled_scan", per_row)
    assert exercises.score("tiled_scan", per_row)[0] == 0  # a rule broken: no partial credit

    def row_by_row(rewards, terminated, gamma, chunk, rows):
        out = torch.zeros_like(rewards)
        B, T = rewards.shape
        _tiled_row_by_row[(triton.cdiv(B, rows),)](rewards, terminated, out, gamma, B, T, CHUNK=chunk, ROWS=rows)
        return out
    if exercises.INTERPRET:  # the scans' height is the interpreter's to see
        with pytest.raises(AssertionError, match=r"^tiled_scan, .*tl\.associative_scan took 1 row\(s\) at a time "
                                                 r"where a program owns 4: scan the \(ROWS, CHUNK\) tile at once"):
            exercises.check("tiled_scan", row_by_row)
    else:
        exercises.check("tiled_scan", row_by_row)  # compiled, the right values of a tile's grid pass
    assert exercises.check("tiled_scan", solution("tiled_scan")) is None
    kernel = solution("tiled_scan").__globals__["_tiled_returns"]

    def grid_by_function(rewards, terminated, gamma, chunk, rows):  # a grid the checker cannot count: let be
        out = torch.empty_like(rewards)
        B, T = rewards.shape
        kernel[lambda meta: (triton.cdiv(B, meta["ROWS"]),)](rewards, terminated, out, gamma, B, T, CHUNK=chunk,
                                                             ROWS=rows)
        return out
    assert exercises.check("tiled_scan", grid_by_function) is None


def test_strided_scan_blames_the_addresses_only_where_a_column_s_last_chunk_is_wrong_too():
    """No carry enters a column's last chunk, so a slip in the carry leaves it right: the hint to
    check the addresses is for answers wrong there too, and the carry's marks (the composed reset
    flag, the chunk's last step) name the other slips, in time-major order."""
    ((_, args, _, expected, marks),) = [c for c in exercises.cases("strided_scan") if c[0].startswith("a transposed")]
    T, B = expected.shape
    bad = np.ones((T, B), dtype=bool)
    got = expected + 1.0  # (not the right values in other places: that is the stores' hint)
    assert "check the addresses" in exercises._strided_hint(args, bad, got, expected)
    bad[(T - 1) // 64 * 64:] = False
    assert exercises._strided_hint(args, bad, got, expected) is None
    reset = next(m for label, m in marks.items() if "composed reset flag" in label)
    chunk_end = next(m for label, m in marks.items() if "the last step of a chunk" in label)
    assert reset.shape == chunk_end.shape == (T, B) and reset.any() and not reset[(T - 1) // 64 * 64:].any()
    assert chunk_end[63].all() and chunk_end.sum() == B * ((T - 1) // 64)


def test_checks_names_each_check_and_its_verdict():
    """exercises.checks: each case's label (and "the probe") with whether it passed, what score
    counts and grade.py's checks_failed column lists."""
    labels = [c[0] for c in exercises.cases("n_step_returns")] + ["the probe"]
    assert exercises.checks("n_step_returns", solution("n_step_returns")) == [(label, True) for label in labels]
    assert exercises.checks("n_step_returns", _n_step_with_a_loop_over_time) == \
        [(label + exercises.RULE_BROKEN if label == "the probe" else label, label != "the probe") for label in labels]
    (ignores,) = [f for w, f in wrong_answers("n_step_returns") if w == "ignores terminations"]
    results = exercises.checks("n_step_returns", ignores)
    assert [ok for _, ok in results] == [label == "the probe" or "terminations" not in label for label in labels]
    assert exercises.credit("n_step_returns", results) == exercises.score("n_step_returns", ignores)
    assert exercises.checks("q_lambda", lambda *a: None) == [(c[0], False) for c in exercises.cases("q_lambda")]


@triton.jit
def _transposed_unmasked_shift(X, P, offs, t, m, T):
    a_prev = tl.load(X[0] + offs - 1, mask=m, other=0.0)  # t = 0 of row 0 reads before the tensor
    return _reset_where_zero(a_prev, tl.load(X[1] + offs, mask=m, other=0.0))


def test_a_load_before_a_tensor_is_told_so():
    """transposed_scan's offs - 1 loaded without t >= 1: under the interpreter the stray load is before
    the tensor's start, and the message says so, not "past the end of the row" (the fourth review's case).
    Compiled, the values are right (step 0's a is never used) and the stray read is the GPU's to catch."""
    if not exercises.INTERPRET:
        pytest.skip("the bounds check is the interpreter's (compiled, a stray access is the GPU's to catch)")
    with pytest.raises(AssertionError) as e:
        exercises.check("transposed_scan", _transposed_unmasked_shift)
    assert "lanes before the start of a tensor through (a load shifted back" in str(e.value), str(e.value)
    assert "past the end" not in str(e.value)


def test_blocks_that_do_not_broadcast_are_told_the_missing_axis():
    """tiled_scan with the carry, one value per row, against the (ROWS, CHUNK) tile without [:, None]:
    the error says which axis is missing (the sixth review's case)."""
    with pytest.raises((AssertionError, RuntimeError)) as e:
        exercises.check("tiled_scan", _tiled_with(NO_AXIS=True))
    assert "Give the smaller one the missing axis, x[:, None]" in str(e.value), str(e.value)


def test_scan_operands_of_two_shapes_are_told_to_build_the_mask_from_both_axes():
    """tiled_scan with a made from a mask of t alone, (1, CHUNK) beside the (ROWS, CHUNK) rewards: the
    scan refuses operands of two shapes, and the hint says which (the ninth review's case)."""
    with pytest.raises((AssertionError, RuntimeError)) as e:
        exercises.check("tiled_scan", _tiled_with(A_FROM_T=True))
    assert "must all have the same shape" in str(e.value) and "rows[:, None] and t[None, :]" in str(e.value), \
        str(e.value)


def test_a_missing_row_offset_is_named():
    """Loads without row * T: every row holds row 0's answer, and the message says so, not the padding
    lanes' hint (the eighth review's case)."""
    msg = _failure("chunked_scan", _chunked_with(LOADS_ROW_0=True))
    assert "Hint: Every row holds row 0's answer" in msg and "padding" not in msg.split("Hint:")[1], msg


def test_chunks_walked_first_to_last_are_named():
    """00b's chunked cumsum walks its chunks forwards; a return walked so gets no carry into the row's first
    chunk: the message names the order, not the padding lanes (the ninth review's case)."""
    msg = _failure("chunked_scan", _chunked_with(FORWARDS=True))
    said = msg.split("Hint:")[1]
    assert said.startswith(" Your chunks run first to last") and "padding" not in said, msg
    assert exercises.fix("chunked_scan").startswith("Walk the chunks from the last one, c = n_chunks - 1 - i")


def test_stores_into_row_0_are_named():
    """Loads and stores without row * T: rows after row 0 are never stored, and the hint says so first,
    in place of the marks of a step whose value is whatever the buffer held (the ninth review's case);
    compiled, where what was stored is not known, it says that only row 0 is right."""
    msg = _failure("chunked_scan", _chunked_with(LOADS_ROW_0=True, STORES_ROW_0=True))
    said = msg.split("Hint:")[1]
    assert msg.count("Hint:") == 1 and "padding" not in said and "never stored, the first at" not in msg, msg
    if exercises.INTERPRET:
        assert said.startswith(" Your kernel's tl.store calls wrote row 0 only"), msg
        assert exercises.fix("chunked_scan").startswith("Row `row` starts at row * T: add that offset to every address")
    else:
        assert said.startswith(" Row 0 is right and every element of every other row is wrong"), msg
        assert exercises.fix("chunked_scan").startswith("Launch one program per row, grid = (B,), and add the row's "
                                                        "offset (row * T) to every load's")


def test_a_grid_of_one_program_is_named_as_such():
    """chunked_scan launched on one program, grid (1,): row 0 alone is stored, and the hint names the grid,
    not a row offset left out (this session's review's case: the fix it got was the row offset's)."""
    def chunked_scan(rewards, gamma, chunk):
        out = torch.zeros_like(rewards)
        _chunked_variant[(1,)](rewards, out, gamma, rewards.shape[1], CHUNK=chunk, **_CHUNKED_RIGHT)
        return out
    msg = _failure("chunked_scan", chunked_scan)
    if exercises.INTERPRET:
        assert msg.split("Hint:")[1].startswith(" Your kernel ran on one program, so only row 0 was stored"), msg
        assert exercises.fix("chunked_scan").startswith("Launch one program per row, grid = (B,)")
    else:  # (compiled: which elements were stored is not known)
        assert "Row 0 is right and every element of every other row is wrong" in msg, msg


def test_a_carry_that_changes_shape_is_told_its_axis():
    """tiled_scan with the carry summed over the tile's rows (axis 0), not its steps: the loop's carry
    changes shape, and the hint says so, not "an integer made a float" (the fourth review's case)."""
    with pytest.raises((AssertionError, RuntimeError)) as e:
        exercises.check("tiled_scan", _tiled_with(CARRY_AXIS_0=True))
    msg = str(e.value)
    assert "A loop's carry changed shape" in msg and "tl.sum(x, axis)" in msg and "an integer" not in msg, msg


@triton.jit
def _doubled_unmasked_store(X, Y, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(Y + offs, 2 * tl.load(X + offs, mask=offs < n, other=0.0))  # the store's mask left out


@triton.jit
def _next_unmasked_load(X, Y, N, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(Y + offs, tl.load(X + offs + 1, mask=offs < N), mask=offs < N)  # x[t + 1], masked as x[t]


def _stray_load_message(kernel):
    """What exercises.guarded says of ``kernel(X, Y, N, BLOCK)`` launched as one program of 8 lanes over 5
    elements."""
    def launch(x):
        y = torch.empty_like(x)
        kernel[(1,)](x, y, x.numel(), BLOCK=8)
        return y
    with pytest.raises(RuntimeError) as e:
        exercises.guarded(launch, torch.arange(5.0))
    return str(e.value)


@pytest.mark.skipif(not exercises.INTERPRET, reason="the guard watches the interpreter's loads and stores")
def test_a_load_one_past_the_last_step_names_the_lane():
    """A load shifted on (offs + 1) masked as the step's own: the row's last step reads just past the
    tensor, and the message names that lane and the shift (a round-43 review's case: "1 of 5 active lanes"
    named no lane)."""
    said = _stray_load_message(_next_unmasked_load)
    assert "(1 of 5 active lanes; lane 4 of the block)" in said, said
    assert "the block's last active lane read just past the end of a tensor (a load shifted on, offs + 1" in said


@triton.jit
def _unmasked_load(X, Y, N, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(Y + offs, tl.load(X + offs), mask=offs < N)  # the load without its mask


@pytest.mark.skipif(not exercises.INTERPRET, reason="the guard watches the interpreter's loads and stores")
def test_lanes_past_one_tensor_s_end_just_below_another_s_start_are_told_as_past_the_end():
    """Two small tensors a few bytes apart (as CI's allocator once placed x and y in the test below): lanes past the
    first's end also lie just below the second's start, and were told as a load shifted back (offs - 1)."""
    buf = np.zeros(16, dtype=np.float32)
    x, y = torch.from_numpy(buf[:5]), torch.from_numpy(buf[8:13])  # y's start 12 bytes past x's end
    with pytest.raises(RuntimeError) as e:
        exercises.guarded(lambda x: (_unmasked_load[(1,)](x, y, 5, BLOCK=8), y)[1], x)
    said = str(e.value)
    assert "(3 of 8 active lanes; lanes 5, 6, 7 of the block)" in said, said
    assert "lanes past the end of the row (or rows past the last) through" in said and "shifted back" not in said, said


@pytest.mark.skipif(not exercises.INTERPRET, reason="the guard watches the interpreter's loads and stores")
def test_several_lanes_past_the_end_are_not_told_as_a_shift():
    """A round-56 review: block_scan's load without a mask (lanes 5 to 7 of 8 past the row's 5 elements) was told,
    besides the lanes, that the block's last lane read just past the end "(a load shifted on, offs + 1 ...)":
    that guess is for one stray lane alone."""
    said = _stray_load_message(_unmasked_load)
    assert "(3 of 8 active lanes; lanes 5, 6, 7 of the block)" in said and "offs + 1" not in said, said
    assert "lanes past the end of the row (or rows past the last) through" in said, said


@triton.jit
def _tile_next_unmasked_load(X, Y, B, T, ROWS: tl.constexpr, CHUNK: tl.constexpr):
    rows, t = tl.arange(0, ROWS), tl.arange(0, CHUNK)
    m = (rows < B)[:, None] & (t < T)[None, :]
    offs = rows[:, None] * T + t[None, :]
    tl.store(Y + offs, tl.load(X + offs + 1, mask=m), mask=m)  # x[t + 1], masked as x[t]


@pytest.mark.skipif(not exercises.INTERPRET, reason="the guard watches the interpreter's loads and stores")
def test_rows_past_b_are_told_as_the_row_mask_not_a_load_shifted_on(tmp_path):
    """A round-50 review: tiled_scan with its row mask forgotten (m from t alone: the last tile's rows past B
    read outside the tensors) was told "a load shifted on, offs + 1 at the last row's last step". Where
    every stray lane lies in a row at or past B, the message says to mask the rows; a tile's load shifted on
    still gets the shift's words."""
    no_row_mask = [("m = (rows < B)[:, None] & (t < T)[None, :]", "m = (t < T)[None, :] & (rows >= 0)[:, None]")]
    with pytest.raises(AssertionError) as e:
        exercises.check("tiled_scan", with_edits("tiled_scan", no_row_mask, tmp_path))
    said = str(e.value)
    assert "a mask that lets rows past the last through: here the stray lanes lie in the tile's rows 1 to 3, " \
           "rows at or past B" in said and "offs + 1" not in said, said
    assert "m = (rows < B)[:, None] & (t < T)[None, :]" in e.value.fix

    def shifted(x):
        y = torch.empty_like(x)
        _tile_next_unmasked_load[(1,)](x, y, x.shape[0], x.shape[1], ROWS=4, CHUNK=8)
        return y
    with pytest.raises(RuntimeError) as e:
        exercises.guarded(shifted, torch.arange(15.0).reshape(3, 5))
    said = str(e.value)
    assert "the block's last active lane read just past the end of a tensor (a load shifted on, offs + 1" in said
    assert "rows at or past B" not in said, said


def _doubled(x, block):
    y = torch.zeros_like(x)
    _doubled_unmasked_store[(1,)](x, y, x.numel(), BLOCK=block)
    return y


@pytest.mark.skipif(not exercises.INTERPRET, reason="the guard watches the interpreter's loads and stores")
def test_guarded_stops_a_stray_store_before_it_happens_and_returns_what_a_right_call_returns():
    """A hint's hand check run through exercises.guarded (the ninth review's case: a store past a
    tensor printed the right answer, then killed the notebook's kernel)."""
    x = torch.arange(5.0)
    with pytest.raises(RuntimeError, match=r"^_doubled: a tl\.store at line \d+ \(tl\.store\(Y \+ offs.* touched memory outside every "
                                            r"tensor passed to the kernel \(3 of 8 active lanes; lanes 5, 6, 7 of the block\)"):
        exercises.guarded(_doubled, x, 8)
    assert exercises.guarded(_doubled, x, block=4).tolist() == [0.0, 2.0, 4.0, 6.0, 0.0]  # in bounds: the call
    assert x.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]


def test_a_kernel_a_gpu_compile_refuses_is_refused():
    """An integer carry that the loop makes a float: the interpreter runs it and the values are
    right; Triton's compiler refuses it. Under the interpreter the checker compiles each accepted
    launch for sm_90 (Triton's front end, no GPU) and says so, once per kernel and argument types;
    compiled, the launch itself fails. Either way the hint is the carry's."""
    with pytest.raises((AssertionError, RuntimeError)) as e:
        exercises.check("chunked_scan", _chunked_with(INT_CARRY=True))
    msg = str(e.value)
    assert "Loop-carried variable carry has initial type int32" in msg and "A loop's carry changed type" in msg, msg
    if exercises.INTERPRET:
        assert "right under the interpreter, but Triton's compiler refuses it for a GPU (sm_90" in msg, msg
        exercises.check("chunked_scan", solution("chunked_scan"))
        seen = len(exercises._FRONTEND_SEEN)
        exercises.check("chunked_scan", solution("chunked_scan"))  # its compiles kept: none again
        assert len(exercises._FRONTEND_SEEN) == seen


@triton.jit
def _awr_exp_int_start(z):
    w = 0  # made a float below: the interpreter runs it, a GPU compile refuses it
    for _ in range(1):
        w += tl.exp(z)
    return w


@triton.jit
def _awr_exp_float_start(z):
    w = tl.zeros_like(z)
    for _ in range(1):
        w += tl.exp(z)
    return w


_AWR_EXP = _awr_exp_int_start  # the helper the hook below calls, by its global name


@triton.jit
def _awr_with_a_helper(X, P, offs, m):
    return tl.minimum(_AWR_EXP(tl.load(X[0] + offs, mask=m, other=0.0) / P[0]), P[1], propagate_nan=tl.PropagateNan.ALL)


def test_a_helper_fixed_is_compiled_again(monkeypatch):
    """The compile check keeps its verdicts by what Triton compiles, the helpers a hook calls
    included: a student who fixes the helper alone (the hook's own code unchanged) is not told
    the old refusal again."""
    if not exercises.INTERPRET:
        pytest.skip("compiled, every launch compiles for real: there is no check of the interpreter's to keep")
    with pytest.raises(AssertionError, match="Triton's compiler refuses it for a GPU"):
        exercises.check("awr_weights", _awr_with_a_helper)
    monkeypatch.setitem(globals(), "_AWR_EXP", _awr_exp_float_start)
    exercises.check("awr_weights", _awr_with_a_helper)


def test_elements_never_stored_without_a_hint_point_at_the_values():
    """A later review's case: one program of 8 lanes for td_target_kernel's longer inputs; the note
    said "the hint above may point elsewhere" where no hint was printed."""
    kernel = solution("td_target_kernel").__globals__["_td_target"]

    def one_program(r, v, d, g):
        out = torch.zeros_like(r)
        kernel[(1,)](r, v, d, out, g, r.numel(), BLOCK=8)
        return out

    def a_gap(r, v, d, g):  # elements 8 to 15 never stored: not a tail
        out = torch.zeros_like(r)
        n = r.numel()
        kernel[(1,)](r, v, d, out, g, min(n, 8), BLOCK=8)
        if n > 16:
            kernel[(triton.cdiv(n - 16, 8),)](r[16:], v[16:], d[16:], out[16:], g, n - 16, BLOCK=8)
        return out

    msg = _failure("td_target_kernel", a_gap)
    if exercises.INTERPRET:
        assert "never stored" in msg and ("the hint below may point elsewhere" in msg) == ("\nHint:" in msg), msg
        assert msg.index("never stored") < msg.index("\nHint:") if "\nHint:" in msg else True, msg  # said first
        assert "(8 never stored, the first at index (8,))" in msg, msg
    # a tail never stored (from element 8 on): the grid is named, in place of the note
    msg = _failure("td_target_kernel", one_program)
    if exercises.INTERPRET:
        assert "\nHint: From flat index 8 on (index (8,)), nothing was stored: your kernel's tl.store calls wrote the " \
               "first 8 of the 1,000 elements" in msg, msg
        assert "Does your grid cover all N = 1,000 elements (a cdiv, not a floor division)?" in msg, msg
        assert "First:" not in msg, msg


def test_a_chunk_never_stored_is_said_under_the_values():
    msg = _failure("chunked_scan", _chunked_with(CHUNK_OFF_BY_ONE=True))
    if exercises.INTERPRET:
        assert "\nHint: Your kernel's tl.store calls wrote none of the 10 elements of the tensor you returned" in msg \
            and "(a loop over chunks: does it visit chunks 0 to n_chunks - 1?)" in msg, msg
    msg = _failure("chunked_scan", _chunked_with(SWAPPED=True))
    assert "never stored" not in msg and "Your combine applies the two maps in the wrong order" in msg, msg


SCAN_HOOK_EXERCISES = ["transposed_scan", "returns_autograd", "q_lambda", "retrace", "vtrace_pg", "soft_lambda_targets"]


def test_every_scan_hook_task_says_triples():
    """scan_hook scans the package's prologues' triples (a, b, reset): each task run through it says
    so plainly, and the pairs with a = 0 as the reset are linear_scan's alone (tensor code)."""
    for name in SCAN_HOOK_EXERCISES:
        text = " ".join(exercises.task(name).split())
        assert "Triples (a, b, reset): reset, a bool per step, is where the trace is cut" in text, name
        assert "A NaN inside b itself is yours: select NaN-able inputs away in b with tl.where" in text, name
        assert "a = 0 is a reset" not in text, name
    for name in exercises.names():
        assert "a_t = 0 cuts the trace" not in exercises.task(name) or "linear_scan" in exercises.task(name), name


@triton.jit
def _returns_pair(X, P, offs, t, m, T):
    r = tl.load(X[0] + offs, mask=m, other=0.0)
    done = tl.load(X[1] + offs, mask=m, other=0) != 0
    return tl.where(done, 0.0, P[0]), r


def test_scan_hook_refuses_a_pair_by_name():
    """The harness's protocol is the package's prologues' triple (a, b, reset): a prologue returning
    a pair (a = 0 its reset, linear_scan's tensor form) is stopped with a message that says triples.
    Compiled, Triton raises it from the caller's line, the message one cause down: the traceback
    shows both."""
    x = [torch.zeros(2, 37, device=DEVICE), torch.zeros(2, 37, dtype=torch.bool, device=DEVICE)]
    with pytest.raises(Exception) as e:
        exercises.scan_hook(_returns_pair, x, (0.9,), chunk=8)
    shown = "\n".join(str(x) for x in exercises._chain(e.value))
    assert "returns a triple (a, b, reset)" in shown, shown


def test_a_nan_at_an_episode_end_says_select_not_multiply_for_numpy_code():
    def reset_multiplied(A, B, reset, initial):
        out, c = np.empty_like(B), initial.copy()
        for s in reversed(range(B.shape[1])):
            out[:, s] = c
            c = B[:, s] + A[:, s] * (1 - reset[:, s]) * c  # 0 * NaN leaks
        return out

    msg = _failure("segment_carries", reset_multiplied)
    assert "must be selected away" in msg and "not multiplied by zero" in msg and "unmasked load" not in msg, msg


def test_segment_carries_speaks_of_segments_and_names_the_next_segment_s_reset(tmp_path):
    """A round-50 review: segment_carries' messages said "step" where they meant a segment ("the latest wrong
    step", "that step is the carry from a segment that resets"); and the next segment's reset planted into the
    solution, reset[:, s + 1], raised an IndexError at the last segment with nothing said about it."""
    msg = _failure("segment_carries", _carries_multiplied)
    assert "the error starts at the latest wrong segment, index (0, 1)" in msg, msg
    assert "Hint: that segment is the segment before one that resets (the carry into it is the next segment's B alone" \
        in msg and "step" not in msg.split("Hint:")[1].split(". A NaN")[0], msg

    next_reset = [("np.where(reset[:, s],", "np.where(reset[:, s + 1],")]
    with pytest.raises(IndexError) as e:
        exercises.check("segment_carries", with_edits("segment_carries", next_reset, tmp_path))
    assert "Your line reads reset[:, s + 1], the next segment's flag: at the last segment there is none. Segment " \
           "s's map selects on its own flag, reset[:, s]" in "\n".join(e.value.__notes__), e.value.__notes__


@pytest.mark.parametrize("edits", [[("max(above, default=0)", "max(above)")],
                                   [("def host_bound", "import numpy as np\n\n\ndef host_bound"),
                                    ("max(above, default=0)", "np.max(above)")]], ids=["max", "np.max"])
def test_host_bound_s_max_of_nothing_is_told_the_case_without_a_host_bound_shape(edits, tmp_path):
    """A round-67 review: max() of no shape, where no shape of the case is host-bound, raised a bare
    ValueError from the student's line."""
    with pytest.raises(ValueError) as e:
        exercises.check("host_bound", with_edits("host_bound", edits, tmp_path))
    notes = "\n".join(e.value.__notes__)
    assert "sac, forward, never above 2x" in notes and "no shape of the pass is host-bound" in notes \
        and "max(..., default=0)" in notes, notes


def test_python_s_or_on_arrays_is_told_to_use_the_element_wise_forms():
    """A round-73 review: `k1 or k2` in combine_arrays raised NumPy's bare "truth value ... is ambiguous"."""
    def combine_arrays(first, second):
        (a1, b1, k1), (a2, b2, k2) = first, second
        return np.where(k2, a2, a2 * a1), np.where(k2, b2, b2 + a2 * b1), k1 or k2

    with pytest.raises(ValueError) as e:
        exercises.check("combine_arrays", combine_arrays)
    notes = "\n".join(e.value.__notes__)
    assert "your function raised it" in notes and "On arrays, use |, & and ~, and np.where" in notes, notes


# ---- A reset selects: a NaN behind an episode end must not leak into the answer ---------------------
@triton.jit
def _td_target_multiplied(R, V, D, OUT, gamma, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    done = (tl.load(D + i, mask=m, other=0) != 0).to(tl.float32)
    tl.store(OUT + i, tl.load(R + i, mask=m, other=0.0) + gamma * (1.0 - done) * tl.load(V + i, mask=m, other=0.0),
             mask=m)


def _td_target_by_multiplying(rewards, next_values, terminated, gamma):
    out = torch.empty_like(rewards)
    _td_target_multiplied[(triton.cdiv(rewards.numel(), 128),)](rewards, next_values, terminated, out, gamma,
                                                                 rewards.numel(), BLOCK=128)
    return out


@triton.jit
def _retrace_multiplied(X, P, offs, t, m, T):
    gamma, lam = P[0], P[1]
    more = t < T - 1
    c = tl.where(more, lam * tl.minimum(tl.exp(tl.load(X[3] + offs, mask=m, other=0.0)), 1.0), 0.0)
    keep = 1.0 - (tl.load(X[4] + offs, mask=m, other=0) != 0).to(tl.float32)  # the multiply form
    q = tl.load(X[2] + offs, mask=m, other=0.0)
    b = tl.load(X[0] + offs, mask=m, other=0.0) + gamma * keep * (tl.load(X[1] + offs, mask=m, other=0.0)
                                                                   - tl.where(more, c * q, 0.0))
    return _reset_where_zero(gamma * keep * c, b)


@triton.jit
def _soft_multiplied(X, P, offs, t, m, T):
    return _soft(X, P, offs, t, m, T, 1, 1.0)  # right but for its multiply by (1 - term)


@pytest.mark.parametrize("name, fn", [("td_target_kernel", _td_target_by_multiplying), ("retrace", _retrace_multiplied),
                                      ("soft_lambda_targets", _soft_multiplied), ("gae_pairs", _gae_pairs_multiplied)])
def test_a_reset_multiplied_by_zero_fails_at_a_nan_behind_the_end(name, fn):
    """The course's rule: a NaN-able input is selected away (tl.where), not multiplied by (1 - done): the
    answers right but for that fail on the case with NaN next values behind the episode ends, and say why.
    Where the pairs go through linear_scan or scan_hook (a = 0 a reset there), the NaN comes from the step's
    own terms, and the hint says so."""
    msg = _failure(name, fn)
    assert "NaN next values behind" in msg.split(":")[0] + msg.split(":")[1], msg
    said = "must be selected away" if name == "td_target_kernel" else "the NaN comes from what that step computes"
    assert "got nan" in msg and said in msg and ("not multiply" in msg or "not multiplied" in msg), msg
    assert exercises.check(name, solution(name)) is None


def test_attempt_compiled_says_the_interpreter_s_checks_did_not_run(monkeypatch, capsys):
    """Compiled on a GPU, a right kernel or hook is told that the interpreter's checks (bounds,
    stores, scan widths) did not run and the grader runs them; a NumPy exercise is not."""
    monkeypatch.setattr(exercises, "check", lambda name, fn, seed=None: None)  # (the verdict only)
    for interpreted in (True, False):
        monkeypatch.setattr(exercises, "INTERPRET", interpreted)
        exercises.attempt("td_target_kernel", lambda *a: None)
        exercises.attempt("gae_pairs", lambda *a: None)
        out = capsys.readouterr().out.splitlines()
        assert out[0] == "td_target_kernel: correct on every case" and "gae_pairs: correct on every case" in out
        warned = [line for line in out if "re-check with TRITON_INTERPRET=1" in line]
        assert len(warned) == (0 if interpreted else 1) and out.index("gae_pairs: correct on every case") == len(out) - 1


def test_the_given_vtrace_prologue_selects_behind_a_termination():
    """exercises.vtrace_prologue, the model 04's students read, never multiplies V(s_{t+1}) by a
    zero factor: with NaN behind every termination, across chunks, its vs equal reference.vtrace's
    (which reads nothing there) and are finite."""
    rng = np.random.default_rng(7)
    B, T = 2, 150
    log_rhos, r, v = (rng.standard_normal((B, T)) * s for s in (0.5, 1.0, 1.0))
    nv = np.concatenate([v[:, 1:], rng.standard_normal((B, 1))], axis=1)
    term = rng.random((B, T)) < 0.05
    term[:, [63, 64, 100]] = True  # at and next to a chunk boundary
    nv_nan = np.where(term, np.nan, nv)
    want = rl.reference.vtrace(log_rhos, r, v, gamma=0.9, rho_bar=1.2, c_bar=0.8, terminated=term,
                               next_values=nv)[0]
    x = [torch.tensor(a, dtype=torch.float32, device=DEVICE) for a in (log_rhos, r, v, nv_nan)]
    got = exercises.scan_hook(exercises.vtrace_prologue, x + [torch.tensor(term, device=DEVICE)], (0.9, 1.2, 0.8),
                              chunk=64).cpu().numpy()
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_what_the_scan_rules_say_of_a_zero_a_is_what_each_scan_does():
    """SCAN_RULES (in the tasks of gae_pairs, n_step_returns, token_gae_pairs) and RESET_RULE (in the
    scan_hook tasks): linear_scan takes a = 0 as a reset, scan_hook the prologue's reset flag, and both
    select, so a NaN after the reset stays out."""
    assert "linear_scan takes a_t = 0 as a\nreset" in exercises.SCAN_RULES
    assert "scan_hook" not in exercises.SCAN_RULES
    assert "y_t = b_t there, selected" in " ".join(exercises.RESET_RULE.split())
    a, b = torch.tensor([[0.9, 0.0, 0.9]], device=DEVICE), torch.tensor([[1.0, 2.0, float("nan")]], device=DEVICE)
    y = rl.linear_scan(a, b).cpu()
    assert torch.isfinite(y[0, :2]).all() and torch.isnan(y[0, 2])
    with np.errstate(invalid="ignore"):  # (the interpreter computes both sides of a tl.where: 0 * NaN)
        hook = exercises.scan_hook(_ab_prologue, [a, b], (), chunk=8).cpu()
    torch.testing.assert_close(hook, y, equal_nan=True)  # the same select: the NaN stays behind the reset


@pytest.mark.parametrize("reverse", [True, False], ids=["reverse", "forward"])
def test_scan_hook_resets_as_linear_scan_does(reverse):
    """scan_hook is linear_scan on the prologue's pairs, a = 0 a reset in both: across chunks, with a NaN
    or an inf right behind each reset (the next step in scan order), the values agree, NaN where a NaN
    lands and finite where a reset keeps it out."""
    rng = np.random.default_rng(3)
    a = rng.uniform(0.5, 1.0, size=(3, 150))
    a[rng.random(a.shape) < 0.1] = 0.0
    a[:, [63, 64, 127, 128]] = 0.0  # resets at chunk boundaries, on both sides
    b = rng.normal(size=a.shape)
    rows, steps = np.nonzero(a == 0.0)
    behind = steps + (1 if reverse else -1)
    ok = (behind >= 0) & (behind < a.shape[1])
    b[rows[ok], behind[ok]] = np.where(rng.random(ok.sum()) < 0.5, np.nan, np.inf)
    with np.errstate(invalid="ignore"):  # (the reference's np.where computes both sides too)
        want = rl.reference.linear_scan(a, b, reverse=reverse)
    assert np.isfinite(want).any() and not np.isfinite(want).all()  # the case has both
    x = [torch.tensor(v, dtype=torch.float32, device=DEVICE) for v in (a, b)]
    with np.errstate(invalid="ignore"):  # (the interpreter computes both sides of a tl.where: 0 * NaN)
        got = exercises.scan_hook(_ab_prologue, x, (), chunk=64, reverse=reverse).cpu().numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, equal_nan=True)
    assert (np.isfinite(got) == np.isfinite(want)).all()


@triton.jit
def _y_in(X, P, offs, t, m, T, y, y_in):
    return y_in


def test_the_epilogue_s_y_in_at_a_reset_is_the_value_behind_it():
    """y_in is the value that entered the step, y_{t+1}, as in the package's epilogues: at a reset step
    too (the step does not read it; an epilogue that uses it there selects it away, as vtrace's does)."""
    a = torch.tensor([[0.5, 0.0, 0.5, 0.5, 0.0]], device=DEVICE)
    b = torch.tensor([[1.0, 2.0, float("nan"), 4.0, 5.0]], device=DEVICE)
    with np.errstate(invalid="ignore"):  # (the interpreter computes both sides of a tl.where: 0 * NaN)
        y_in = exercises.scan_hook(_ab_prologue, [a, b], (), chunk=2, epilogue=_y_in).cpu()
    y = rl.reference.linear_scan(a.cpu().numpy(), b.cpu().numpy())
    torch.testing.assert_close(y_in[0], torch.tensor([*y[0, 1:], 0.0], dtype=torch.float32), equal_nan=True)
    assert torch.isnan(y_in[0, 1]) and torch.isfinite(y_in[0, [0, 2, 3, 4]]).all()  # step 1 resets: NaN behind it


@triton.jit
def _ab_prologue(X, P, offs, t, m, T):
    return _reset_where_zero(tl.load(X[0] + offs, mask=m, other=1.0), tl.load(X[1] + offs, mask=m, other=0.0))


# ---- A copy of the harness, against the exercises the guide grades --------------------------------
# The students' wheel holds the harness (exercises._scan_hook_kernel: a chunked scan with resets that runs
# any prologue) and 00c prints it. Pasted into a file of one's own, with a few lines of prologue, it answers
# some kernel exercises: those are practice in docs/TEACHING.md, and every graded one refuses it.
HARNESS_GLUE = '''

@triton.jit
def td_prologue(X, P, offs, t, m, T):  # a reset everywhere: every step its own target
    r = tl.load(X[0] + offs, mask=m, other=0.0)
    v = tl.load(X[1] + offs, mask=m, other=0.0)
    d = tl.load(X[2] + offs, mask=m, other=0) != 0
    return tl.zeros_like(r), r + tl.where(d, 0.0, P[0] * v), m


@triton.jit
def returns_prologue(X, P, offs, t, m, T):
    r = tl.load(X[0] + offs, mask=m, other=0.0)
    return tl.where(m, P[0], 1.0), r, tl.load(X[1] + offs, mask=m, other=0) != 0


@triton.jit
def gae_prologue(X, P, offs, t, m, T):
    r = tl.load(X[0] + offs, mask=m, other=0.0)
    v = tl.load(X[1] + offs, mask=m, other=0.0)
    nv = tl.load(X[2] + offs, mask=m, other=0.0)
    d = tl.load(X[3] + offs, mask=m, other=0) != 0
    return tl.where(m, P[0] * P[1], 1.0), r + tl.where(d, 0.0, P[0] * nv) - v, d


@triton.jit
def pg_epilogue(X, P, offs, t, m, T, y, y_in):  # V-trace's advantage from vs_{t+1}, the value behind the step
    rho = tl.exp(tl.load(X[0] + offs, mask=m, other=0.0))
    r = tl.load(X[1] + offs, mask=m, other=0.0)
    v = tl.load(X[2] + offs, mask=m, other=0.0)
    nv = tl.load(X[3] + offs, mask=m, other=0.0)
    term = tl.load(X[4] + offs, mask=m, other=0) != 0
    after = tl.where(t == T - 1, nv, y_in)
    return tl.minimum(rho, P[1]) * (r + tl.where(term, 0.0, P[0] * after) - v)
'''


@pytest.fixture(scope="module")
def copied_harness(tmp_path_factory):
    parts = [textwrap.dedent(inspect.getsource(f.fn)).replace("@jit\n", "@triton.jit\n", 1)
             for f in (exercises._combine, exercises._scan_steps, exercises._scan_hook_kernel)]
    path = tmp_path_factory.mktemp("student") / "copied_harness.py"
    path.write_text("import triton\nimport triton.language as tl\n\n\n" + "\n\n".join(parts) + HARNESS_GLUE)
    spec = importlib.util.spec_from_file_location("copied_harness", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _through_the_copy(h, name):
    """``name``'s answer as the copied harness and a few lines of glue."""
    def launch(X, P, T, prologue, chunk=64, epilogue=None):
        out = torch.empty(X[0].shape, dtype=torch.float32, device=X[0].device)
        h._scan_hook_kernel[(X[0].shape[0],)](X, out, P, T, 0.0, PROLOGUE=prologue, CHUNK=chunk, REVERSE=True,
                                              EPILOGUE=epilogue)
        return out
    return {
        "td_target_kernel": lambda r, v, d, g: launch((r[None], v[None], d[None]), (g,), r.numel(), h.td_prologue)[0],
        "gae_kernel": lambda r, v, nv, d, g, lam, c: launch((r, v, nv, d), (g, lam), r.shape[1], h.gae_prologue, c),
        "discounted_max": lambda r, d, g, c: launch((r, d), (g,), r.shape[1], h.returns_prologue, c),  # a sum, not a max
        "strided_scan": lambda r, d, g, c: launch((r.t().contiguous(), d.t().contiguous()), (g,), r.shape[0],
                                                  h.returns_prologue, c).t(),
        "vtrace_kernel": lambda lr, r, v, nv, term, g, rho_bar, c_bar, c: tuple(
            launch((lr, r, v, nv, term), (g, rho_bar, c_bar), r.shape[1], exercises.vtrace_prologue, c, epilogue)
            for epilogue in (None, h.pg_epilogue)),
    }[name]


@pytest.mark.parametrize("name,passes", [("td_target_kernel", False), ("strided_scan", False), ("discounted_max", False),
                                         ("gae_kernel", True), ("vtrace_kernel", True)])
def test_a_copy_of_the_harness_answers_no_exercise_the_guide_grades(copied_harness, name, passes):
    """td_target_kernel refuses its scan, strided_scan its copies of the views; gae_kernel and
    vtrace_kernel take it, so the guide calls them practice (as it does strided_scan, which an
    edited copy, or scan.py's, passes)."""
    fn = _through_the_copy(copied_harness, name)
    if passes:
        from test_grading import graded_in_the_guide
        assert exercises.check(name, fn, seed=3) is None and name not in graded_in_the_guide()
    else:
        with pytest.raises(AssertionError, match=rf"^{name}, "):
            exercises.check(name, fn, seed=3)
        assert exercises.score(name, fn, seed=3)[0] == 0


@triton.jit
def _block_scan_last(R, G, gamma, last, T, BLOCK: tl.constexpr, SLIP: tl.constexpr):
    t = tl.arange(0, BLOCK)
    m = t < T
    pad = 1.0
    if SLIP == 3:
        pad = gamma  # lanes past T: (gamma, 0), not the identity (1, 0)
    a = tl.where(m, gamma, pad)
    A, B = tl.associative_scan((a, tl.load(R + t, mask=m, other=0.0)), 0, _combine_right, reverse=True)
    if SLIP == 1:
        g = B  # last_value left out
    elif SLIP == 2:
        g = B + last  # added to every step, undiscounted
    else:
        g = B + A * last
    tl.store(G + t, g, mask=m)


def _block_scan_slip(slip):
    def block_scan(rewards, gamma, last_value):
        out = torch.empty_like(rewards)
        _block_scan_last[(1,)](rewards, out, gamma, last_value, rewards.numel(),
                               BLOCK=triton.next_power_of_2(rewards.numel()), SLIP=slip)
        return out
    return block_scan


@pytest.mark.parametrize("slip,said", [
    (1, "Hint: Your returns leave last_value out: they are the returns of a row that ends with G_T = 0"),
    (2, "Hint: Your returns add last_value to every step undiscounted (B_t + last_value).")])
def test_block_scan_names_what_became_of_last_value(slip, said):
    """The twelfth review's case: a kernel that drops last_value, or adds it undiscounted, was told
    to make its padding lanes the identity; the padding is right in both."""
    assert exercises.check("block_scan", _block_scan_slip(0)) is None  # the same kernel, right
    with pytest.raises(AssertionError) as e:
        exercises.check("block_scan", _block_scan_slip(slip))
    assert said in str(e.value) and "identity" not in str(e.value)
    assert "G_t = B_t + A_t * last_value" in exercises.fix("block_scan")


def _two_stage_one_block_of(block):
    """_two_stage_one_block with blocks of ``block`` elements: the finisher adds ``block`` partials."""
    def two_stage_mean(x):
        n = x.numel()
        partials = torch.empty(triton.cdiv(n, block), dtype=torch.float32, device=x.device)
        out = torch.empty((), dtype=torch.float32, device=x.device)
        solution("two_stage_mean").__globals__["_partials"][(partials.numel(),)](x, partials, n, BLOCK=block)
        _finish_one_block[(1,)](partials, out, partials.numel(), n, BLOCK=block)
        return out
    return two_stage_mean


def test_two_stage_mean_names_a_finisher_of_one_block_whatever_its_block():
    """The thirteenth review's case: blocks of 64, so a finisher of one block adds the first 4,096
    elements of the n = 20,000 case; it was told nothing."""
    with pytest.raises(AssertionError) as e:
        exercises.check("two_stage_mean", _two_stage_one_block_of(64))
    said = str(e.value)
    assert "n=20000" in said and "the sum of the first 4,096 elements only, over n: with blocks of 64" in said, said
    assert "Loop over the partials" not in said and exercises.fix("two_stage_mean").startswith("Loop over the partials")


@pytest.mark.parametrize("fn,said,fixed", [
    (lambda p, q: (q[0] @ p[0], p[1] + q[1]), "Your b is b1 + b2: p's vector part skips q", "Take b1 through q: b = A2 @ b1 + b2."),
    (lambda p, q: (q[0] * p[0], q[1] + q[0] @ p[1]), "Your A is the elementwise product A1 * A2: at n = 1 it is the "
     "matrix product, which is why n = 1 passed.", "Use the matrix product, @."),
    (lambda p, q: (q[0] @ p[0], q[0] @ p[1]), "Your b is A2 @ b1: p's vector part goes through q, but q's own vector "
     "part b2 is missing", "Add it: b = A2 @ b1 + b2.")], ids=["b1 + b2", "A1 * A2", "A2 b1 (b2 left out)"])
def test_matrix_compose_names_b1_skipping_q_and_an_elementwise_product(fn, said, fixed):
    """The thirteenth review's cases: b1 + b2 was asked about the order (not its slip), and A1 * A2 was
    told "every element is wrong" where n = 1 had passed; a later review's A1 @ b2 was asked about the order too."""
    msg = _failure("matrix_compose", fn)
    assert said in msg and "is q applied first" not in msg and "Every element" not in msg, msg
    assert exercises.fix("matrix_compose") == fixed


def _nested(x):
    total = 0
    for i in range(x):
        total += i
        if i % 2:
            total -= 1
        else:
            total += 2
    return total


def test_key_lines_prints_the_kept_lines_under_their_headers_and_names_a_missing_key():
    """13c section 6's printout: each kept line under its note, the for/if/else lines that hold it, and
    '...' where lines are left out; a note whose key no line holds is a ValueError naming it."""
    assert exercises.key_lines(_nested, {"total = 0": "start", "total += 2": "the else branch"}).splitlines() == [
        "# yours: start", "total = 0", "for i in range(x):", "    ...", "    if i % 2:", "        ...", "    else:",
        "        # yours: the else branch", "        total += 2"]
    with pytest.raises(ValueError, match=r"notes: no line of _nested holds \['total = 1'\]"):
        exercises.key_lines(_nested, {"total = 1": "absent"})


def _carry_from_b_s(name):
    """The carry handed on taken from the scanned b_s at the chunk's first step, not from y (or g)."""
    (line,) = [ln.strip() for ln in source(name).splitlines() if ln.strip().startswith("carry = tl.sum(")]
    slip = line.replace(", y,", ", b_s,").replace(", g,", ", b_s,")
    assert slip != line
    return [(line, slip)]


@pytest.mark.parametrize("name", ["gae_kernel", "hooked_scan", "reset_scan"])
def test_a_carry_taken_from_the_scanned_b_fails(name, tmp_path):
    """A round-31 review's slip: the carry handed on is b_s at the chunk's first step, not y (they differ
    by A_t * carry). gae_kernel and hooked_scan passed it, their carries too small to show (gamma * lam =
    0.72 over chunks of 64) or cut by an episode end in every chunk: a case with gamma * lam near 1 and
    chunks of 16 without an end fails it."""
    with pytest.raises(AssertionError, match="expected") as e:
        exercises.check(name, with_edits(name, _carry_from_b_s(name), tmp_path))
    # (reset_scan's first wrong element is where the carry enters: once blamed on the row's offset)
    assert "row's offset" not in str(e.value) and "chunk" in str(e.value), str(e.value)


@pytest.mark.parametrize("name", ["chunked_scan", "reset_scan"])
def test_a_carry_from_the_scanned_b_is_named(name, tmp_path):
    """A cold review of 00-00d: chunked_scan's carry taken from the scanned B (carry = b_s at the chunk's first
    step, not b_s + a_s * carry_in) got only the chunk's-last-step mark. The values recomputed with that slip
    match, and the hint says the carry leaves out the carry that entered the chunk."""
    with pytest.raises(AssertionError) as e:
        exercises.check(name, with_edits(name, _carry_from_b_s(name), tmp_path))
    hint = str(e.value).split("Hint: ")[1]
    assert "Your carry leaves out the carry that entered this chunk" in hint, hint
    assert "not b_s" in e.value.fix, e.value.fix
    with pytest.raises(AssertionError) as e:  # another carry slip: not this hint
        exercises.check("chunked_scan", with_edits("chunked_scan", [(
            "carry = tl.sum(tl.where(t == c * CHUNK, g, 0.0), 0)", "carry = tl.sum(tl.where(t == c * CHUNK, g, 0.0), 0) * 0.5")],
            tmp_path))
    assert "leaves out the carry that entered" not in str(e.value), str(e.value)


def test_chunked_reset_scan_says_what_is_graded():
    """A cold review of 00-00d: a plain reverse loop, carry_in filled in afterwards from y, passes chunked_reset_scan
    (only its two arrays are graded; the NumPy exercise has no loop detection to refuse it). The task says so
    plainly: y and carry_in are graded, and the chunk plan is the point."""
    def plain_loop(a, b, reset, chunk):
        T = len(a)
        y, carry_in, after = np.zeros(T), np.zeros(T), 0.0
        for t in reversed(range(T)):
            y[t] = b[t] if reset[t] else b[t] + a[t] * after
            after = y[t]
        for start in range(0, T, chunk):
            carry_in[start:start + chunk] = y[start + chunk] if start + chunk < T else 0.0
        return y, carry_in

    exercises.check("chunked_reset_scan", plain_loop)  # it passes: what the task must say
    said = " ".join(exercises.task("chunked_reset_scan").split())
    assert "What is graded is those two arrays, y and carry_in, and nothing else" in said, said
    assert "A plain reverse loop over the steps, with carry_in filled in afterwards from y, would pass" in said, said
    assert "write the chunk plan above" in said, said


def test_a_swapped_combine_is_named_in_vtrace_kernel(tmp_path):
    """A round-35 review: the capstone's likeliest slip, the combine's operands swapped, got the generic
    ordinary-step hint; any kernel's combine seen applying the maps in the wrong order is now named."""
    swapped = [("return tl.where(k2, a2, a2 * a1), tl.where(k2, b2, b2 + a2 * b1), k1 | k2",
                "return tl.where(k1, a1, a1 * a2), tl.where(k1, b1, b1 + a1 * b2), k1 | k2")]
    if not exercises.INTERPRET:
        pytest.skip("the student's combine is tried on two maps by the interpreter (compiled, it runs only in the scan)")
    with pytest.raises(AssertionError, match="Your combine applies the two maps in the wrong order") as e:
        exercises.check("vtrace_kernel", with_edits("vtrace_kernel", swapped, tmp_path))
    assert "tl.where(k2, a2, a2 * a1)" in e.value.fix


def test_a_swapped_max_combine_is_named_in_discounted_max(tmp_path):
    """A cold review of 00-00d: discounted_max's combine with its maps swapped, c = max(c1, g1 * c2), got the
    generic ordinary-step hint. Under the interpreter its combine is tried on two max-maps (MAX_MAPS), as an
    affine combine is on TWO_MAPS, and the order slip is named with the order rule."""
    swapped = [('c = tl.where(c1 == float("-inf"), c2, tl.maximum(c2, g2 * c1))',
                'c = tl.where(c1 == float("-inf"), c2, tl.maximum(c1, g1 * c2))')]
    if not exercises.INTERPRET:
        pytest.skip("the student's combine is tried on two maps by the interpreter (compiled, it runs only in the scan)")
    with pytest.raises(AssertionError) as e:
        exercises.check("discounted_max", with_edits("discounted_max", swapped, tmp_path))
    hint = str(e.value).split("Hint: ")[1]
    assert hint.startswith("Your combine applies the two maps in the wrong order: its c is max(c1, g1 * c2)"), hint
    assert "the order rule, notebook 00, section 3" in hint and "An ordinary step" not in hint, hint
    assert "c = max(c2, g2 * c1)" in e.value.fix
    assert exercises.check("discounted_max", solution("discounted_max")) is None  # the right order: no such hint


@pytest.mark.parametrize("guard", ["combine", "carry"])
def test_a_missing_inf_guard_in_discounted_max_is_named(guard, tmp_path):
    """A cold review of 00-00d: leaving out the -inf guard in the combine, or the one on the carry, got the same
    hint, naming both. The student's combine is tried on (1, -inf), then (0, 3) (MAX_INF_MAPS): NaN there, the
    combine's guard is missing; 3, the carry's."""
    lines = {"combine": ('c = tl.where(c1 == float("-inf"), c2, tl.maximum(c2, g2 * c1))',
                         'c = tl.maximum(c2, g2 * c1)'),
             "carry": ('tl.where(carry == float("-inf"), c_s, tl.maximum(c_s, g_s * carry))',
                       'tl.maximum(c_s, g_s * carry)')}

    if not exercises.INTERPRET:
        pytest.skip("the checker's max lets a NaN win, and tries the student's combine, under the interpreter only")
    with pytest.raises(AssertionError) as e:
        exercises.check("discounted_max", with_edits("discounted_max", [lines[guard]], tmp_path))
    hint = str(e.value).split("Hint: ")[1]
    assert hint.startswith("A NaN where the answer is finite, with a gamma whose powers underflow"), hint
    if guard == "combine":
        assert "Your combine is where it comes from: on (g1, c1) = (1, -inf), a padding lane, then (g2, c2) = (0, 3)" in hint, hint
        assert "tl.where(c1 == float('-inf'), c2" in e.value.fix and "carry ==" not in e.value.fix, e.value.fix
    else:
        assert "Your combine selects it away already" in hint and "multiplies the first carry, -inf" in hint, hint
        assert "tl.where(carry == float('-inf')" in e.value.fix and "c1 ==" not in e.value.fix, e.value.fix
    assert exercises.check("discounted_max", solution("discounted_max")) is None


def test_a_block_narrower_than_the_row_is_named_in_block_scan(tmp_path):
    """A cold review of 00-00d: block_scan launched with a fixed BLOCK = 64 on a row of T = 1000 got a right
    "First:" line (elements never stored) under a hint that blamed the padding lanes, and advice to loop over
    the chunks, which block_scan's task forbids (one program, one block). Now the block is named."""
    if not exercises.INTERPRET:
        pytest.skip("which elements a kernel stored, and how wide its scan ran, are seen by the interpreter")
    with pytest.raises(AssertionError) as e:
        exercises.check("block_scan", with_edits("block_scan", [("BLOCK=triton.next_power_of_2(T)", "BLOCK=64")], tmp_path))
    said = str(e.value)
    assert "T=1000" in said and "wrote only 64 of the 1000 elements" in said, said
    hint = said.split("\nHint: ")[1]
    assert hint.startswith("Your kernel ran one program whose block is 64 lanes wide"), hint
    assert "the block must cover the whole row, BLOCK ≥ T" in hint and "triton.next_power_of_2(T)" in hint, hint
    assert "padding" not in said and "identity" not in said and "a loop over the chunks in each" not in said, said


@pytest.mark.parametrize("name", ["td_target_kernel", "block_scan"])
def test_a_kernel_named_like_its_wrapper_is_named(name, tmp_path):
    """A cold review of 00-00d: a @triton.jit kernel named like the Python function that launches it (00b's rule:
    give it another name) got only "TypeError: 'function' object is not subscriptable". The launch line's name
    is a plain function: the rule is said back."""
    text = source(name)
    kernel = re.search(r"(\w+)\[\(", text[text.index(f"def {name}("):]).group(1)  # the one it launches
    same_name = [(f"def {kernel}(", f"def {name}("), (f"{kernel}[(", f"{name}[(")]  # @triton.jit def name, launched
    with pytest.raises(TypeError, match="'function' object is not subscriptable") as e:
        exercises.check(name, with_edits(name, same_name, tmp_path))
    notes = "\n".join(e.value.__notes__)
    assert "your function raised it at line" in notes and f"{name}[(" in notes, notes
    assert (f"Your @triton.jit kernel and the function that launches it share the name {name}: the second definition "
            f"replaces the first, so the launch {name}[grid] indexes the plain Python function. Give your @triton.jit "
            "kernel another name, such as _") in notes, notes
    with pytest.raises(TypeError) as e:  # another TypeError: no such note
        exercises.check(name, lambda *args: len(args[-1]))  # (its last argument a float)
    assert "share the name" not in "\n".join(getattr(e.value, "__notes__", ())), e.value.__notes__


@triton.jit
def _transposed_open_start(X, P, offs, t, m, T):  # step 0 not a reset: term_{t-1} loaded with other=0
    term_before = tl.load(X[1] + offs - 1, mask=m & (t >= 1), other=0) != 0
    return tl.where(m, P[0], 1.0), tl.load(X[0] + offs, mask=m, other=0.0), term_before


def _returns_autograd_of(forward, backward):
    """returns_autograd with these two prologues, the backward's run forwards in time."""
    return _returns_autograd_with(lambda ctx, g: exercises.scan_hook(
        backward, (g.contiguous(), ctx.saved_tensors[0]), (ctx.gamma,), reverse=False), forward)


def test_returns_autograd_names_a_window_end_or_a_step_0_that_does_not_reset():
    """The case that starts both scans from a value past the window (round 39's reader: the generic "what
    does it bootstrap from?" pointed away from the missing reset): each missing reset is named, and the
    right answer passes."""
    msg = _failure("returns_autograd", _returns_autograd_of(_returns_fwd, _transposed_right))
    assert "past the window: both scans start from 100" in msg and "Your forward's last step does not reset" in msg, msg
    assert "term | (t == T - 1)" in exercises.fix("returns_autograd")
    right_forward = solution("returns_autograd").__globals__["_returns_prologue"]
    msg = _failure("returns_autograd", _returns_autograd_of(right_forward, _transposed_open_start))
    assert "Your backward's step 0 does not reset" in msg, msg
    exercises.check("returns_autograd", solution("returns_autograd"))


@triton.jit
def _max_combine_right(g1, c1, k1, g2, c2, k2):
    return tl.where(k2, g2, g2 * g1), tl.where(k2, c2, tl.maximum(c2, g2 * c1)), k1 | k2


@triton.jit
def _discounted_max_python_max(R, D, M, gamma, T, CHUNK: tl.constexpr):
    row = tl.program_id(0)
    carry = float("-inf")
    n_chunks = tl.cdiv(T, CHUNK)
    for i in range(0, n_chunks):
        c = n_chunks - 1 - i
        t = c * CHUNK + tl.arange(0, CHUNK)
        m = t < T
        r = tl.load(R + row * T + t, mask=m, other=float("-inf"))
        term = (tl.load(D + row * T + t, mask=m, other=0) != 0) & m
        g_s, c_s, k_s = tl.associative_scan((tl.where(m, gamma, 1.0), r, term), 0, _max_combine_right, reverse=True)
        out = tl.where(k_s, c_s, max(c_s, g_s * carry))  # Python's max on blocks: the slip
        tl.store(M + row * T + t, out, mask=m)
        carry = tl.max(tl.where(t == c * CHUNK, out, float("-inf")), 0)


@pytest.mark.skipif(not exercises.INTERPRET, reason="compiled, Triton 3.6 makes Python's max on blocks an "
                                                   "elementwise max: the interpreter's answer is the wrong one")
def test_python_max_in_a_kernel_body_is_said_first_and_a_right_max_combine_is_not_blamed():
    """Round 39's reader: Python's max in discounted_max's kernel body, the combine right, got "Your combine
    applies the two maps in the wrong order" (the affine reading of the combine on a max-plus one) before the
    Python finding. The Python finding comes first, and the combine's order is not blamed."""
    def discounted_max(rewards, terminated, gamma, chunk):
        out = torch.empty_like(rewards)
        _discounted_max_python_max[(rewards.shape[0],)](rewards, terminated, out, gamma, rewards.shape[1], CHUNK=chunk)
        return out

    msg = _failure("discounted_max", discounted_max)
    assert "wrong order" not in msg and "`max(` in `out = tl.where(k_s, c_s, max(c_s, g_s * carry))" in msg, msg
    assert "\nHint:" not in msg or msg.index("Your @triton.jit code uses Python") < msg.index("\nHint:"), msg


@triton.jit
def _transposed_previous_row(X, P, offs, t, m, T):  # a_{t-1} unmasked at t = 0 (the row before's last a), no reset
    return tl.load(X[0] + offs - 1, mask=m & (offs >= 1), other=0.0), tl.load(X[1] + offs, mask=m, other=0.0), t < 0


@triton.jit
def _transposed_zero_at_step_0(X, P, offs, t, m, T):  # a_{-1} = 0 (other=0.0) in place of the reset: round 41's case
    return tl.load(X[0] + offs - 1, mask=m & (t >= 1), other=0.0), tl.load(X[1] + offs, mask=m, other=0.0), t < 0


def test_transposed_scan_checks_its_step_0_reset():
    """Round 40's reader: a prologue with no reset at t = 0, reading the row before's last a there, passed (the
    scan started from 0). The case that starts from 100 catches it and names the missing reset."""
    msg = _failure("transposed_scan", _transposed_previous_row)
    assert "before the window: the scan starts from inf" in msg and "Your step 0 does not reset" in msg, msg
    msg = _failure("transposed_scan", _transposed_zero_at_step_0)  # a = 0 at step 0 for the reset: 0 * inf
    assert "Your step 0 does not reset" in msg and "0 * inf = NaN" in msg, msg
    exercises.check("transposed_scan", solution("transposed_scan"))


# reset_scan with r + 0.0 * r: an inf reward made NaN (a cold review's case); its loads have the row's offset
_RESET_SCAN_INF_TIMES_0 = [("        term = (tl.load(D", "        r = r + 0.0 * r  # 0 * inf = NaN\n        term = (tl.load(D")]


def test_the_row_0_hint_is_said_only_where_row_0_s_inputs_give_the_wrong_rows(tmp_path):
    """A cold review: "A load without the row's offset reads row 0's input in every row" was said where every load
    had it: reset_scan's 0.0 * r made row 1's inf NaN, and row 0's NaN stayed NaN, so row 0 alone was right. The
    hint is said now only where the reference on row 0's inputs, in every row, gives the wrong elements; there the
    input is named. Here the inf made NaN is."""
    msg = _failure("reset_scan", with_edits("reset_scan", _RESET_SCAN_INF_TIMES_0, tmp_path))
    assert "expected inf, got nan" in msg, msg
    assert "row's offset" not in msg and "Row 0 is right" not in msg and "An ordinary step" not in msg, msg
    assert "Hint: The answer there is inf (an inf among the case's inputs reaches that step), and yours is NaN: the " \
           "inf met a 0 (0 * inf = NaN) or its own negative (inf - inf)." in msg, msg
    msg = _failure("gae_kernel", _gae_kernel_flags_of_row_0)  # the flags' load without the offset: named
    assert "Every wrong element here is what the answer would be with row 0's terminated in every row" in msg, msg


# vtrace_kernel's pg kernel with blocks of 32 launched on B * T // 32 programs (at least one), not a cdiv
_PG_GRID_FLOORED = [("block = 1024", "block = 32"),
                    ("_pg_kernel[(triton.cdiv(B * T, block),)]", "_pg_kernel[(max(1, B * T // block),)]")]


def test_a_grid_short_of_the_tensor_is_named_from_the_flat_index_on(tmp_path):
    """A cold review: vtrace_kernel's pg kernel on B * T // BLOCK programs left a flat tail of pg unwritten, and
    the hint blamed a load without the row's offset. Elements never stored that are a tail in flat order are
    named as such: the grid, a cdiv, not a floor division; the "First:" note is not said besides."""
    if not exercises.INTERPRET:
        pytest.skip("which elements a kernel stored is seen by the interpreter")
    msg = _failure("vtrace_kernel", with_edits("vtrace_kernel", _PG_GRID_FLOORED, tmp_path))
    assert "shape (2, 100), off-policy, chunk 64, result 1 (pg_advantages)" in msg, msg
    assert "\nHint: From flat index 192 on (index (1, 92)), nothing was stored: your kernel's tl.store calls wrote " \
           "the first 192 of the 200 elements of the tensor you returned (pg_advantages) and none after them" in msg, msg
    assert msg.endswith("Does your grid cover all B·T = 200 elements (a cdiv, not a floor division)?"), msg
    assert "row's offset" not in msg and "First:" not in msg, msg
    # a grid of 0 programs on the first case: none of pg stored, said of that result
    msg = _failure("vtrace_kernel", with_edits("vtrace_kernel", [(
        "_pg_kernel[(triton.cdiv(B * T, block),)]", "_pg_kernel[(B * T // block,)]")], tmp_path))
    assert "Hint: Your kernel's tl.store calls wrote none of the 5 elements of the tensor you returned " \
           "(pg_advantages)" in msg and "First:" not in msg, msg


def test_elements_never_stored_are_not_counted_as_the_student_s_nan(monkeypatch):
    """The "N of them NaN or inf where the answer is finite" note counts the student's NaN: an element never
    stored holds the buffer's bytes (torch.empty's garbage, or a NaN fill), not theirs."""
    monkeypatch.setitem(exercises.SEEN, "past_leaks", 0.0)  # (no earlier check's leak)
    case, args, _, expected, marks = exercises._cases("td_target_kernel")[2]
    got = np.array(expected, dtype=np.float64)
    got[5] += 1.0  # a wrong element that was stored, finite, first
    got[-104:] = np.nan  # a tail never stored, NaN
    never = np.zeros(got.shape, dtype=bool)
    never[-104:] = True
    ex = exercises._get("td_target_kernel")
    with pytest.raises(AssertionError) as e:
        exercises._compare(ex, case, got, expected, marks, args=args,
                           unstored=exercises._Unstored(never, 4 * np.arange(got.size)))
    msg = str(e.value)
    assert "(105 of 1000 elements wrong)" in msg and "NaN or inf where the answer is finite" not in msg, msg
    assert "From flat index 896 on (index (896,)), nothing was stored" in msg, msg
    with pytest.raises(AssertionError) as e:  # the same values, nothing known of the stores: the NaN are counted
        exercises._compare(ex, case, got, expected, marks, args=args)
    assert "104 of them NaN or inf where the answer is finite" in str(e.value), str(e.value)


# soft_lambda_targets with no reset at the window's last step, a = 0 there instead (a cold review's case)
_SOFT_WINDOW_END_BY_A_0 = [("return gamma * lam, r + tl.where(term, 0.0, gamma * soft_next), ~going_on",
                            "return tl.where(going_on, gamma * lam, 0.0), r + tl.where(term, 0.0, gamma * soft_next), term")]


def test_a_cut_at_the_window_s_last_step_may_be_a_0_multiplier(tmp_path):
    """A cold review: soft_lambda_targets's task said "only the window's last step's reset keeps it out" (the
    value past the window), and a prologue with a = 0 there and no reset passes (0 * 100 = 0). The shared rule
    says what is true: a cut there, its reset or a multiplier of 0."""
    edited = with_edits("soft_lambda_targets", _SOFT_WINDOW_END_BY_A_0, tmp_path)
    assert exercises.check("soft_lambda_targets", edited) is None
    for name in ("soft_lambda_targets", "q_lambda", "retrace"):
        task = exercises.task(name)
        assert "only the window's last step's reset" not in task, name
        assert "only a cut at the window's last step keeps it out, its reset\nor a multiplier a = 0 there" in task, name
    task = exercises.task("soft_lambda_targets")
    assert "a reset too, zeroes" not in task and "A\ntermination zeroes the bracket, G_t = r_t" in task, task


# q_lambda with no reset at a non-greedy next action or the window's last step, a = gamma lam_t = 0 there
# instead; a termination still resets (a cold review's case)
_Q_LAMBDA_CUTS_BY_A_0 = [("return gamma * lam, b_t, term | cut", "return gamma * lam_t, b_t, term")]


def test_q_lambda_s_cut_may_be_a_0_multiplier(tmp_path):
    """A cold review: q_lambda's task said each cut of the trace is a reset, and a prologue that cuts with
    a = gamma lam_t = 0 and no reset passes (G_{t+1}, what 0 multiplies, is finite in every case, as
    retrace's and soft_lambda_targets's a = 0 at the window's last step pass). The task says so."""
    edited = with_edits("q_lambda", _Q_LAMBDA_CUTS_BY_A_0, tmp_path)
    assert exercises.check("q_lambda", edited) is None
    assert "A multiplier\na_t = 0 at a cut passes too: what it multiplies, G_{t+1}, is finite in every case" in \
        exercises.task("q_lambda")


def test_q_lambda_names_peng_s_trace(tmp_path):
    """Round 58: the trace not cut at a non-greedy action (Peng's Q(lambda)) got only the step's mark."""
    msg = _failure("q_lambda", with_edits("q_lambda", [("cut = ~greedy | (t == T - 1)", "cut = t == T - 1")], tmp_path))
    assert "non-greedy actions" in msg and "These are Peng's Q(lambda) targets: your trace goes on after a " \
        "non-greedy next action." in msg, msg


def test_vtrace_pg_names_a_termination_that_bootstraps(tmp_path):
    """Round 58: gamma * v_next added at a termination too got only the step's mark."""
    msg = _failure("vtrace_pg", with_edits("vtrace_pg", [("tl.where(term, 0.0, gamma * v_next)", "gamma * v_next")],
                                           tmp_path))
    assert "These are the policy-gradient advantages with the terminations ignored: at a terminal step your " \
        "advantage still adds gamma * v_next" in msg, msg


@pytest.mark.parametrize("name", ["gae_pairs", "token_gae_pairs"])
def test_pairs_with_a_0_everywhere_are_refused(name):
    """The summary's noted loophole: pairs (0, y), the answer computed before the scan, passed every case
    (y_t = b_t). A probe on a rollout with no episode end refuses an a that is 0 at every step."""
    right = solution(name)
    initial = exercises.PAST_WINDOW if name == "gae_pairs" else 0.0

    def degenerate(*args):
        a, b = right(*args)
        return torch.zeros_like(b), rl.linear_scan(a, b, initial=torch.full(b.shape[:-1], initial, dtype=b.dtype,
                                                                                   device=b.device))
    msg = _failure(name, degenerate)
    assert msg.startswith(f"{name}: your a is 0 at every step, on a rollout with no episode end: linear_scan then "
                          "does nothing"), msg
    assert exercises.check(name, right) is None


def test_awr_s_clip_in_the_exponent_at_the_log_passes():
    """exp(min(A / beta, ln max_weight)) is max_weight's clip, taken before the exp: a right answer, which the
    no-clip hint ("a clip of the advantage, before the exp, does not bound it") seemed to condemn."""
    assert exercises.check("awr_weights", _awr_exponent_clipped_at_the_log) is None


def test_vtrace_kernel_names_rho_times_vs_minus_v(tmp_path):
    """04's section 4 shows pg0 == vs0 - v on-policy; a pg kernel that stores rho (vs_t - V_t) is named."""
    vs_minus_v = [("pg = rho * (tl.load(R + i, mask=m, other=0.0) + gamma * v_next - tl.load(V + i, mask=m, other=0.0))",
                   "pg = rho * (tl.load(VS + i, mask=m, other=0.0) - tl.load(V + i, mask=m, other=0.0))")]
    with pytest.raises(AssertionError) as e:
        exercises.check("vtrace_kernel", with_edits("vtrace_kernel", vs_minus_v, tmp_path))
    assert "result 1 (pg_advantages)" in str(e.value) and "Hint: These are the policy-gradient advantages with a " \
        "slip: your pg is vs_t - V_t (or rho_t times it: rho_t is 1 at every wrong step)" in str(e.value), e.value
    assert e.value.fix.startswith("In the second kernel, pg = rho * (r + gamma * v_next - V)"), e.value.fix


def _chunked_reset_carry_from_b(a, b, reset, chunk):
    """chunked_reset_scan whose carry is the chunk's scanned B at its first step, not y there (B + A * carry)."""
    T = len(a)
    y, carry_in, carry = np.zeros(T), np.zeros(T), 0.0
    for start in reversed(range(0, T, chunk)):
        end = min(start + chunk, T)
        a_s, b_s, k_s = 1.0, 0.0, False
        for t in reversed(range(start, end)):
            a_s, b_s, k_s = (a[t], b[t], True) if reset[t] else (a[t] * a_s, b[t] + a[t] * b_s, k_s)
            y[t] = b_s if k_s else b_s + a_s * carry
            carry_in[t] = carry
        carry = b_s
    return y, carry_in


def test_chunked_reset_scan_names_the_carry_that_entered_the_chunk():
    """Where y first goes wrong at step t and carry_in[t] is wrong too, the carry that entered t's chunk is named
    with its expected and actual values; where y is right and carry_in is not, that is said."""
    msg = _failure_seeded("chunked_reset_scan", _chunked_reset_carry_from_b, 1)
    assert "result 0 (y): the error starts at the latest wrong step, index (3,)" in msg, msg
    assert "The carry that entered this chunk is wrong: carry_in[3] expected 0.834385, got 1.07651, while every " \
           "later step's y is right." in msg, msg
    msg = _failure("chunked_reset_scan", _chunked_reset_carry_from_b)  # the resets keep it out of y
    assert "result 1 (carry_in)" in msg and "Your y is right in this case, but carry_in is not." in msg, msg
