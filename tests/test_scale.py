"""Scale, for every algorithm (GPU-marked; run on the H200 with ``python -m pytest -m gpu``):

* more than 2**31 elements (offsets need int64) and more than 10**6 steps in a row work, and
  match the torch path on sampled rows (the whole row for the long sequences);
* memory: a call allocates its outputs and nothing of size rows × steps beside them (the long
  sequence split keeps O(rows × segments) carries).
"""
from __future__ import annotations

import pytest
import torch

import rltriton_lite as rl

pytestmark = pytest.mark.gpu

SLACK = 16 << 20  # bytes a call may allocate beside its outputs (partials, segment carries)


def _inputs(names, B, T, seed, *, time_major=False):
    """Random (B, T) float32 inputs ``names`` (flags: terminated, truncated, mask), as
    (T, B) buffers viewed time-major when asked."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    shape = (T, B) if time_major else (B, T)
    x = {}
    for k in names:
        if k in ("terminated", "truncated"):
            x[k] = torch.rand(shape, device="cuda", generator=g) < 1e-3
        elif k == "a":  # decay factors in [0, 1)
            x[k] = torch.rand(shape, device="cuda", generator=g)
        elif k == "mask":
            x[k] = torch.rand(shape, device="cuda", generator=g) > 0.05
        elif k in ("log_rhos", "log_probs", "old_log_probs", "next_log_probs"):
            x[k] = torch.empty(shape, device="cuda").normal_(0.0, 0.3, generator=g) - 1.0
        else:
            x[k] = torch.empty(shape, device="cuda").normal_(generator=g)
    return x


# name: (inputs, call(x, backend, time_dim) -> tensors to compare (per-step outputs first))
CASES = {
    "linear_scan": (("a", "b", "mask"), lambda x, be, td: (
        rl.linear_scan(x["a"], x["b"], mask=x["mask"], time_dim=td, backend=be),)),
    "discounted_returns": (("rewards", "next_values", "terminated", "truncated", "mask"), lambda x, be, td: (
        rl.discounted_returns(x["rewards"], gamma=0.999, terminated=x["terminated"], truncated=x["truncated"],
                              next_values=x["next_values"], mask=x["mask"], time_dim=td, backend=be),)),
    "gae": (("rewards", "values", "terminated", "mask"), lambda x, be, td: tuple(
        rl.gae(x["rewards"], x["values"], gamma=0.999, lambda_=0.97, terminated=x["terminated"], mask=x["mask"],
               time_dim=td, backend=be))),
    "td_lambda": (("rewards", "next_values", "terminated", "truncated"), lambda x, be, td: (
        rl.td_lambda(x["rewards"], x["next_values"], gamma=0.999, lambda_=0.9, terminated=x["terminated"],
                     truncated=x["truncated"], time_dim=td, backend=be),)),
    "vtrace": (("log_rhos", "rewards", "values", "next_values", "terminated"), lambda x, be, td: tuple(
        rl.vtrace(x["log_rhos"], x["rewards"], x["values"], gamma=0.999, lambda_=0.95, terminated=x["terminated"],
                  next_values=x["next_values"], time_dim=td, backend=be))),
    "sac_targets": (("rewards", "q1", "q2", "next_log_probs", "log_probs", "terminated"), lambda x, be, td: (
        rl.sac_targets(x["rewards"], (x["q1"], x["q2"]), x["next_log_probs"], gamma=0.999, alpha=0.2, lambda_=0.8,
                       log_probs=x["log_probs"], terminated=x["terminated"], time_dim=td, backend=be),)),
    "ppo_clip_loss": (("log_probs", "old_log_probs", "advantages", "mask"), lambda x, be, td: (
        rl.ppo_clip_loss(x["log_probs"], x["old_log_probs"], x["advantages"], mask=x["mask"], reduction="none",
                         backend=be).loss,
        rl.ppo_clip_loss(x["log_probs"], x["old_log_probs"], x["advantages"], mask=x["mask"], backend=be).loss)),
    "crr_loss": (("log_probs", "q", "baseline", "mask"), lambda x, be, td: (lambda out: (out[1], out[2], out[0]))(
        rl.crr_loss(x["log_probs"], x["q"], x["baseline"], mask=x["mask"], backend=be))),
    "sac_actor_loss": (("log_probs", "q1", "q2", "mask"), lambda x, be, td: (
        rl.sac_actor_loss(x["log_probs"], (x["q1"], x["q2"]), mask=x["mask"], backend=be),)),
}


def _out_bytes(outs):
    return sum(o.numel() * o.element_size() for o in outs)


# A mask costs an estimator one byte per step (the window's ends, masks.py), and four more where it
# derives the next values from `values` (no next_values given): gae's case.
MASK_BYTES = {"discounted_returns": 1, "gae": 5}


def _run_measured(call):
    """``call()``'s outputs and the bytes it allocated at its peak beyond what was there."""
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    outs = call()
    torch.cuda.synchronize()
    return outs, torch.cuda.max_memory_allocated() - base


@pytest.mark.parametrize("name", list(CASES))
def test_long_rows_past_a_million_steps(name):
    """2 rows of 2**20 + 77 steps (the time split across programs): equal to the torch path on
    the whole of both rows; memory = outputs (+ carries)."""
    names, call = CASES[name]
    B, T = 2, (1 << 20) + 77
    x = _inputs(names, B, T, seed=1)
    outs, extra = _run_measured(lambda: call(x, "triton", -1))
    allowed = _out_bytes(outs) + MASK_BYTES.get(name, 0) * B * T + SLACK
    assert extra <= allowed, f"{extra / 2**20:.1f} MiB allocated for {_out_bytes(outs) / 2**20:.1f}"
    expected = call(x, "torch", -1)
    for o, e in zip(outs, expected):
        assert torch.isfinite(o).all()
        scale = max(1.0, e.abs().max().item())
        torch.testing.assert_close(o, e, rtol=1e-4, atol=1e-4 * scale)


@pytest.mark.xdist_group("gpu_memory")  # tens of GiB each: one at a time (pytest -n 8 --dist loadgroup)
@pytest.mark.parametrize("time_major", [False, True], ids=["batch_major", "time_major"])
@pytest.mark.parametrize("name", list(CASES))
def test_more_than_2_31_elements(name, time_major):
    """(2**21 + 1) rows × 1024 steps = 2**31 + 1024 elements: offsets past int32, compared with
    the torch path on sampled rows (first, second, middle, last); memory = outputs (and a
    mask's bytes per step)."""
    names, call = CASES[name]
    B, T = (1 << 21) + 1, 1024
    need = (len(names) + 3) * B * T * 4  # inputs, outputs and the sampled copies, roughly
    torch.cuda.empty_cache()  # the blocks earlier tests left cached count as used
    if torch.cuda.mem_get_info()[0] < need:
        pytest.fail(f"needs {need / 2**30:.0f} GiB of free GPU memory")  # an H200 has it: never skip silently
    x = _inputs(names, B, T, seed=2, time_major=time_major)
    td = 0 if time_major else -1
    outs, extra = _run_measured(lambda: call(x, "triton", td))
    allowed = _out_bytes(outs) + MASK_BYTES.get(name, 0) * B * T + SLACK
    assert extra <= allowed, f"{extra / 2**20:.1f} MiB allocated for {_out_bytes(outs) / 2**20:.1f}"
    rows = torch.tensor([0, 1, B // 2, B - 1], device="cuda")
    pick = (lambda t, r=rows: t[:, r].t().contiguous()) if time_major else (lambda t, r=rows: t[r])  # noqa: E731
    expected = call({k: pick(v) for k, v in x.items()}, "torch", -1)
    for i, (o, e) in enumerate(zip(outs, expected)):
        if o.dim() == 0:  # a masked mean over every element: the torch path's, chunk by chunk
            total = count = 0.0
            for chunk in torch.arange(B, device="cuda").split(1 << 18):
                xc = {k: pick(v, chunk) for k, v in x.items()}
                n = xc["mask"].sum().item()
                total += call(xc, "torch", -1)[i].double().item() * n
                count += n
            assert abs(o.item() - total / count) <= 1e-4 * max(1.0, abs(total / count))
            continue
        o = pick(o)
        assert torch.isfinite(o).all()
        scale = max(1.0, e.abs().max().item())
        torch.testing.assert_close(o, e, rtol=1e-4, atol=1e-4 * scale)
