"""The losses over a torch.distributed group (gloo, on the CPU): 2 and 3 processes, each with its
share of one batch (uneven shares, an empty one, padding), against one process holding it all:
the loss, its statistics and each rank's gradient. Ranks that disagree on the call get the same
clear error, never a hang: every collective has a timeout, and the processes a deadline."""
from __future__ import annotations

import datetime
import os
import traceback

import pytest
import torch
import torch.multiprocessing as mp

import rltriton_lite as rl

from conftest import DEVICE

DEADLINE_S = 240
pytestmark = [pytest.mark.xdist_group("distributed"),
              pytest.mark.skipif(not torch.distributed.is_available(), reason="this torch has no torch.distributed")]


def _batch(seed=0, n=37, k=3):
    g = torch.Generator().manual_seed(seed)
    x = {"log_probs": 0.3 * torch.randn(n, generator=g, dtype=torch.float64) - 1.0,
         "old_log_probs": 0.3 * torch.randn(n, generator=g, dtype=torch.float64) - 1.0,
         "advantages": torch.randn(n, generator=g, dtype=torch.float64),
         "q": torch.randn(n, generator=g, dtype=torch.float64),
         "baseline": torch.randn(n, k, generator=g, dtype=torch.float64),
         "q2": torch.randn(n, generator=g, dtype=torch.float64),
         "mask": torch.rand(n, generator=g) > 0.2}
    x["mask"][[3, 20, 21]] = False
    return x


LOSSES = {
    "ppo": lambda x, be, **kw: rl.ppo_clip_loss(x["log_probs"], x["old_log_probs"], x["advantages"], mask=x["mask"],
                                                backend=be, **kw),
    "ppo, normalised": lambda x, be, **kw: rl.ppo_clip_loss(x["log_probs"], x["old_log_probs"], x["advantages"],
                                                            normalize_advantages=True, mask=x["mask"], backend=be,
                                                            **kw),
    "ppo, sum": lambda x, be, **kw: rl.ppo_clip_loss(x["log_probs"], x["old_log_probs"], x["advantages"],
                                                     mask=x["mask"], reduction="sum", backend=be, **kw),
    "crr": lambda x, be, **kw: rl.crr_loss(x["log_probs"], x["q"], x["baseline"], mask=x["mask"], backend=be, **kw),
    "sac_actor": lambda x, be, **kw: rl.sac_actor_loss(x["log_probs"], [x["q"], x["q2"]], mask=x["mask"], backend=be,
                                                       **kw),
}


def _loss_and_stats(out):
    if isinstance(out, torch.Tensor):
        return out, ()
    return out[0], tuple(t for t in out[1:] if t is not None and t.dim() == 0)


def _share(x, bounds, rank):
    lo, hi = bounds[rank], bounds[rank + 1]
    return {k: v[lo:hi].clone() for k, v in x.items()}


def _worker(rank, world, init, backend, bounds, out_dir, disagree):
    """Every loss of LOSSES on this rank's share (one process start for all of them)."""
    import torch.distributed as dist
    try:
        dist.init_process_group("gloo", init_method=init, rank=rank, world_size=world,
                                timeout=datetime.timedelta(seconds=60))
        results = {}
        for name in (["ppo"] if disagree else LOSSES):
            x = _share(_batch(), bounds, rank)
            if disagree and rank == 1:
                x = {k: (v.float() if v.is_floating_point() else v) for k, v in x.items()}
            x["log_probs"].requires_grad_()
            loss, stats = _loss_and_stats(LOSSES[name](x, backend, group=dist.group.WORLD))
            (g,) = torch.autograd.grad(loss, x["log_probs"])
            results[name] = {"loss": loss.detach(), "stats": [s.detach() for s in stats], "grad": g}
        torch.save(results, os.path.join(out_dir, f"{rank}.pt"))
    except Exception as e:  # every rank reports what it raised
        torch.save({"error": f"{type(e).__name__}: {e}", "trace": traceback.format_exc()},
                   os.path.join(out_dir, f"{rank}.pt"))
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()


def _run(world, backend, bounds, tmp_path, disagree=False):
    init = f"file://{tmp_path / 'rendezvous'}"
    ctx = mp.spawn(_worker, args=(world, init, backend, bounds, str(tmp_path), disagree), nprocs=world, join=False)
    deadline = datetime.datetime.now() + datetime.timedelta(seconds=DEADLINE_S)
    while not ctx.join(timeout=5):
        if datetime.datetime.now() > deadline:
            for p in ctx.processes:
                p.kill()
            pytest.fail(f"{world} processes still running after {DEADLINE_S} s: a collective hung")
    return [torch.load(tmp_path / f"{r}.pt") for r in range(world)]


@pytest.mark.parametrize("backend", ["triton", "torch"])
@pytest.mark.parametrize("world,bounds", [(2, [0, 15, 37]), (3, [0, 20, 20, 37])],
                         ids=["2 ranks", "3 ranks, one empty"])
def test_a_loss_over_ranks_is_the_one_process_loss(world, bounds, backend, tmp_path):
    if DEVICE != "cpu":
        pytest.skip("gloo on the CPU here; NCCL runs on the 2-GPU machine (its own issue)")
    results = _run(world, backend, bounds, tmp_path)
    for r in results:
        assert "error" not in r, r.get("trace")
    for name, call in LOSSES.items():
        x = _batch()
        x["log_probs"].requires_grad_()
        loss, stats = _loss_and_stats(call(x, backend))
        (g,) = torch.autograd.grad(loss, x["log_probs"])
        for r in results:  # every rank has the global loss and statistics
            torch.testing.assert_close(r[name]["loss"], loss.detach(), rtol=1e-12, atol=1e-12, msg=name)
            for s, e in zip(r[name]["stats"], stats):
                torch.testing.assert_close(s, e.detach(), rtol=1e-12, atol=1e-12, msg=name)
        # each rank's gradient is the global loss's, for its own elements
        torch.testing.assert_close(torch.cat([r[name]["grad"] for r in results]), g, rtol=1e-12, atol=1e-12,
                                   msg=name)


def test_ranks_that_disagree_get_the_same_error(tmp_path):
    if DEVICE != "cpu":
        pytest.skip("gloo on the CPU here")
    results = _run(2, "torch", [0, 15, 37], tmp_path, disagree=True)
    errors = [r.get("error", "") for r in results]
    assert all(e.startswith("ValueError: group: the ranks disagree on the call") for e in errors), errors
    assert "float64" in errors[0] and "float32" in errors[0]
