"""Inputs as RL code has them: NumPy arrays (SB3's buffer), bootstrap values of shape (N, 1) or
(1, N), flags that broadcast like gamma, float flags that must hold 0 or 1; and ``backend="auto"``
never choosing the interpreter."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import rltriton_lite as rl
from rltriton_lite import _triton
from rltriton_lite.plan import use_triton

from conftest import DEVICE

T, N = 7, 3  # time-major (num_steps, num_envs), as CleanRL and SB3 keep rollouts


def _rollout(seed=0):
    g = np.random.default_rng(seed)
    r, v, nv = g.normal(size=(3, T, N)).astype(np.float32)
    term = g.random((T, N)) < 0.2
    return r, v, nv, term


CALLS = {
    "gae": lambda r, v, nv, term: rl.gae(r, v, next_values=nv, terminated=term, time_dim=0),
    "discounted_returns": lambda r, v, nv, term: rl.discounted_returns(r, terminated=term, next_values=nv, time_dim=0),
    "td_lambda": lambda r, v, nv, term: rl.td_lambda(r, nv, terminated=term, time_dim=0),
    "vtrace": lambda r, v, nv, term: rl.vtrace(v * 0.1, r, v, next_values=nv, terminated=term, time_dim=0),
    "sac_targets": lambda r, v, nv, term: rl.sac_targets(r, [v, nv], r, terminated=term, time_dim=0),
    "ppo_clip_loss": lambda r, v, nv, term: rl.ppo_clip_loss(r * 0.1, v * 0.1, nv),
    "crr_loss": lambda r, v, nv, term: rl.crr_loss(r, v, nv),
    "linear_scan": lambda r, v, nv, term: rl.linear_scan(np.abs(v) if isinstance(v, np.ndarray) else v.abs(), r,
                                                         time_dim=0),
}


def _leaves(out):
    return [x for x in (out if isinstance(out, tuple) else (out,)) if x is not None]


@pytest.mark.parametrize("name", CALLS)
def test_numpy_in_numpy_out(name):
    """Arrays are CPU tensors without a copy; the results come back as arrays, equal to the
    tensors' results, the inputs untouched."""
    arrays = _rollout()
    before = [a.copy() for a in arrays]
    got = CALLS[name](*arrays)
    want = CALLS[name](*(torch.from_numpy(a) for a in arrays))
    assert isinstance(got, tuple) == isinstance(want, tuple) and (type(got) is type(want) or isinstance(got, np.ndarray))
    for g, w in zip(_leaves(got), _leaves(want)):
        assert isinstance(g, np.ndarray), type(g)
        np.testing.assert_array_equal(g, w.numpy())
    for a, b in zip(arrays, before):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("shape", [(1, N), (N, 1)])
def test_bootstrap_value_with_a_singleton_dim(shape):
    """CleanRL's next_value is (1, N), SB3's last_values (N, 1): the same as (N,)."""
    r, v, _, term = (torch.from_numpy(a).to(DEVICE) for a in _rollout(1))
    boot = torch.randn(N, device=DEVICE)
    want = rl.gae(r, v, terminated=term, bootstrap_value=boot, time_dim=0)
    got = rl.gae(r, v, terminated=term, bootstrap_value=boot.reshape(shape), time_dim=0)
    torch.testing.assert_close(got.advantages, want.advantages, rtol=0, atol=0)
    with pytest.raises(ValueError, match="bootstrap_value"):
        rl.gae(r, v, bootstrap_value=torch.randn(N + 1, 1, device=DEVICE), time_dim=0)
    # time-major buffers passed without time_dim=0: the message says which dim was taken as time
    with pytest.raises(ValueError, match=rf"bootstrap_value of shape \({N},\) does not broadcast to "
                                         rf"\({r.shape[0]},\), the batch shape of a \({r.shape[0]}, {N}\) input with "
                                         r"time along dim 1"):
        rl.gae(r, v, terminated=term, bootstrap_value=boot)


@pytest.mark.parametrize("backend", ["torch", "triton"])
def test_flags_broadcast_like_gamma(backend):
    """A flag of shape (T, 1) (every env ends at the same steps) is the expanded flag."""
    r, v, nv, _ = (torch.from_numpy(a).to(DEVICE) for a in _rollout(2))
    col = torch.zeros(T, 1, dtype=torch.bool, device=DEVICE)
    col[3] = True
    for fn in (lambda f: rl.gae(r, v, next_values=nv, terminated=f, time_dim=0, backend=backend).advantages,
               lambda f: rl.td_lambda(r, nv, truncated=f, time_dim=0, backend=backend),
               lambda f: rl.linear_scan(v.abs(), r, mask=f, time_dim=0, backend=backend)):
        torch.testing.assert_close(fn(col), fn(col.expand(T, N).contiguous()), rtol=0, atol=0)


@pytest.mark.parametrize("bad", [0.5, float("nan"), 2.0])
def test_float_flag_must_be_0_or_1_on_cpu(bad):
    """Read where it costs no device sync: CPU tensors and arrays (a CUDA flag counts any
    nonzero as set, unchecked, as the README says)."""
    r, v, _, _ = _rollout(3)
    flag = np.zeros((T, N), np.float32)
    flag[2, 1] = bad
    with pytest.raises(ValueError, match="terminated must hold 0 or 1"):
        rl.gae(r, v, terminated=flag, time_dim=0)
    flag[2, 1] = 1.0  # SB3 keeps its flags as float32 arrays: 0 and 1 are fine
    rl.gae(r, v, terminated=flag, time_dim=0)


def test_auto_never_picks_the_interpreter():
    """backend="auto" on a CPU is the PyTorch path even with TRITON_INTERPRET=1 (the interpreter
    is far slower than the loop it replaces); backend="triton" forces it."""
    cpu = torch.device("cpu")
    assert use_triton("auto", cpu) is False
    if _triton.HAS_TRITON and _triton.INTERPRET:
        assert use_triton("triton", cpu) is True
    else:  # the interpreter is off (a GPU machine): asking for the kernels on CPU tensors says how
        with pytest.raises(ValueError, match="TRITON_INTERPRET=1"):
            use_triton("triton", cpu)
    if torch.cuda.is_available():
        assert use_triton("auto", torch.device("cuda")) is _triton.HAS_TRITON


@pytest.mark.parametrize("name", ["gae", "sac_targets", "ppo_clip_loss", "crr_loss"])
def test_a_replaced_flag_is_checked_on_every_call(name):
    """A float flag becomes a bool copy, so the call is not planned: the second call with the
    same signature still reads the values (a plan would have skipped them) and still agrees."""
    r, v, nv, _ = (torch.from_numpy(a) for a in _rollout(4))
    good = torch.zeros(T, N)
    good[1, 2] = 1.0
    call = {
        "gae": lambda f: rl.gae(r, v, terminated=f, time_dim=0).advantages,
        "sac_targets": lambda f: rl.sac_targets(r, [v, nv], r, terminated=f, time_dim=0),
        "ppo_clip_loss": lambda f: rl.ppo_clip_loss(r * 0.1, v * 0.1, nv, mask=f).loss,
        "crr_loss": lambda f: rl.crr_loss(r, v, nv, mask=f).loss,
    }[name]
    want = call(good.bool())
    for _ in range(2):
        torch.testing.assert_close(call(good), want, rtol=0, atol=0)
    bad = good.clone()
    bad[0, 0] = 0.5
    with pytest.raises(ValueError, match="must hold 0 or 1"):
        call(bad)


def test_a_broadcast_flag_is_not_planned_as_its_expansion():
    """The second call with a (T, 1) flag takes the same path as the first (a plan made from the
    expanded view would read the raw flag with the wrong strides)."""
    r, v, nv, _ = (torch.from_numpy(a).to(DEVICE) for a in _rollout(5))
    col = torch.tensor([False, True, False, False, True, False, False], device=DEVICE)[:, None]
    want = rl.gae(r, v, terminated=col.expand(T, N).contiguous(), time_dim=0, backend="triton").advantages
    for _ in range(3):
        got = rl.gae(r, v, terminated=col, time_dim=0, backend="triton").advantages
        torch.testing.assert_close(got, want, rtol=0, atol=0)
