"""Calls over a torch.distributed group (gloo, on the CPU), 2 and 3 processes, against one process
holding it all. The losses (``group=``): each rank a share of one batch (uneven shares, an empty
one, padding); the loss, its statistics and each rank's gradient. The scans (``time_group=``):
each rank a segment of the same rows' steps (uneven, empty), with an episode end, a truncation and
padding exactly at a segment boundary; every output and every input's gradient, and NaN kept in
its episode. Ranks that disagree on the call get the same clear error, never a hang: every
collective has a timeout, and the processes a deadline. On a GPU the processes share it (gloo
carries the exchange through the CPU; NCCL needs a GPU per rank: the 2-GPU machine's issue)."""
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
    return {k: v.to(DEVICE) for k, v in x.items()}


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


def _rollout(seed=0, rows=3, steps=17, nan=False):
    """Rows of 17 steps with events at the boundary of the segments [0, 8) and [8, 17): row 0
    ends an episode at step 7, row 1 is truncated there, row 2 is padding at steps 7 and 8 and
    after step 13 (the last rank holds none of its steps in the 3-rank split); ``nan``: a NaN
    reward at step 12 of row 0, inside the episode after the end at step 7."""
    g = torch.Generator().manual_seed(seed)
    f = lambda scale=1.0, shift=0.0: scale * torch.randn(rows, steps, generator=g, dtype=torch.float64) + shift  # noqa: E731
    x = {"rewards": f(), "values": f(), "next_values": f(), "log_rhos": f(0.3), "log_probs": f(0.3, -1.0),
         "next_log_probs": f(0.3, -1.0), "q2": f(), "a": torch.rand(rows, steps, generator=g, dtype=torch.float64),
         "b": f(), "terminated": torch.rand(rows, steps, generator=g) < 0.1,
         "truncated": torch.zeros(rows, steps, dtype=torch.bool), "mask": torch.rand(rows, steps, generator=g) > 0.15,
         "bootstrap": torch.randn(rows, generator=g, dtype=torch.float64),
         "initial": torch.randn(rows, generator=g, dtype=torch.float64)}
    x["terminated"][0, 7] = True
    x["terminated"][0, 8:13] = False
    x["truncated"][1, 7] = True
    x["mask"][2, [7, 8]] = False
    x["mask"][2, 13:] = False
    x["a"][0, 3] = 0.0  # a boundary of linear_scan
    if nan:
        x["rewards"][0, 12] = float("nan")
    return {k: v.to(DEVICE) for k, v in x.items()}


SCANS = {  # name: (call, the inputs with gradients)
    "linear_scan": (lambda x, be, **kw: rl.linear_scan(x["a"], x["b"], initial=x["initial"], backend=be, **kw),
                    ("a", "b", "initial")),
    "linear_scan, forwards, mask": (lambda x, be, **kw: rl.linear_scan(
        x["a"], x["b"], reverse=False, initial=x["initial"], mask=x["mask"], backend=be, **kw), ("a", "b", "initial")),
    "discounted_returns": (lambda x, be, **kw: rl.discounted_returns(
        x["rewards"], gamma=0.9, terminated=x["terminated"], bootstrap_value=x["bootstrap"], mask=x["mask"],
        backend=be, **kw), ("rewards", "bootstrap")),
    "gae": (lambda x, be, **kw: rl.gae(x["rewards"], x["values"], gamma=0.9, lambda_=0.8, terminated=x["terminated"],
                                       bootstrap_value=x["bootstrap"], backend=be, **kw),
            ("rewards", "values", "bootstrap")),
    "gae, mask": (lambda x, be, **kw: rl.gae(x["rewards"], x["values"], gamma=0.9, lambda_=0.8,
                                             terminated=x["terminated"], bootstrap_value=x["bootstrap"],
                                             mask=x["mask"], backend=be, **kw), ("rewards", "values", "bootstrap")),
    "gae, truncated": (lambda x, be, **kw: rl.gae(x["rewards"], x["values"], gamma=0.9, lambda_=0.8,
                                                  terminated=x["terminated"], truncated=x["truncated"],
                                                  next_values=x["next_values"], mask=x["mask"], backend=be, **kw),
                       ("rewards", "values", "next_values")),
    "td_lambda": (lambda x, be, **kw: rl.td_lambda(x["rewards"], x["next_values"], gamma=0.9, lambda_=0.8,
                                                   terminated=x["terminated"], truncated=x["truncated"],
                                                   mask=x["mask"], backend=be, **kw), ("rewards", "next_values")),
    "vtrace, mask": (lambda x, be, **kw: rl.vtrace(x["log_rhos"], x["rewards"], x["values"], gamma=0.9, lambda_=0.8,
                                                   rho_bar=1.2, c_bar=0.9, pg_rho_bar=1.1, terminated=x["terminated"],
                                                   bootstrap_value=x["bootstrap"], mask=x["mask"], backend=be, **kw),
                     ("rewards", "values", "bootstrap")),
    "vtrace, truncated": (lambda x, be, **kw: rl.vtrace(
        x["log_rhos"], x["rewards"], x["values"], gamma=0.9, terminated=x["terminated"], truncated=x["truncated"],
        next_values=x["next_values"], backend=be, **kw), ("rewards", "values", "next_values")),
    "sac_targets, mask": (lambda x, be, **kw: rl.sac_targets(
        x["rewards"], [x["next_values"], x["q2"]], x["next_log_probs"], gamma=0.9, alpha=0.3, lambda_=0.7,
        log_probs=x["log_probs"], terminated=x["terminated"], truncated=x["truncated"], mask=x["mask"], backend=be,
        **kw), ("rewards", "next_values", "q2", "next_log_probs", "log_probs")),
}
# the scans run on the Triton interpreter (its time); compiled, all of them
INTERPRETED = ("gae, mask", "vtrace, mask", "sac_targets, mask") if DEVICE == "cpu" \
    else tuple(SCANS)


def _scans(backend, world):
    """The scans a world runs on a backend: under the interpreter, INTERPRETED on two ranks only."""
    if backend != "triton":
        return list(SCANS)
    return INTERPRETED if DEVICE != "cpu" or world == 2 else ()


def _outputs(out):
    return tuple(out) if isinstance(out, tuple) else (out,)


def _scan_results(name, x, backend, cut=None, **kw):
    """The outputs of SCANS[name] on ``x`` (its steps [cut[0], cut[1]) if given) and the gradients
    of a fixed weighting of them."""
    call, wrt = SCANS[name]
    lo, hi = (0, x["rewards"].shape[-1]) if cut is None else cut
    x = {k: (v[:, lo:hi].clone() if v.dim() == 2 else v.clone()) for k, v in x.items()}
    for k in wrt:
        x[k].requires_grad_()
    outs = _outputs(call(x, backend, **kw))
    g = torch.Generator().manual_seed(1)
    weights = [torch.randn(o.shape[0], 17, generator=g, dtype=torch.float64)[:, lo:hi].to(o.device) for o in outs]
    grads = torch.autograd.grad(sum((o * w).sum() for o, w in zip(outs, weights)), [x[k] for k in wrt],
                                allow_unused=True)
    return [o.detach() for o in outs], [torch.zeros_like(x[k]) if d is None else d for k, d in zip(wrt, grads)]


BACKENDS = ("triton", "torch")


def _disagreements(rank, group):
    """The three ways ranks disagree, in turn (each raises after its header's collective, which
    leaves the group usable): the error each rank got."""
    errors = {}
    for what in ("losses", "scan rows", "scan dtype"):
        try:
            if what == "losses":
                x = _share(_batch(), [0, 15, 37], rank)
                x = {k: (v.float() if v.is_floating_point() and rank == 1 else v) for k, v in x.items()}
                LOSSES["ppo"](x, "torch", group=group)
            else:
                x = _rollout(rows=4 if what == "scan rows" and rank == 1 else 3)
                if what == "scan dtype" and rank == 1:
                    x = {k: (v.float() if v.is_floating_point() else v) for k, v in x.items()}
                rl.gae(x["rewards"][:, :5], x["values"][:, :5], time_group=group)
            errors[what] = "no error"
        except ValueError as e:
            errors[what] = f"ValueError: {e}"
    return errors


def _worker(rank, world, init, bounds, steps, out_dir, disagree):
    """Every loss of LOSSES and every scan of SCANS (INTERPRETED under the interpreter) on this
    rank's share, on both backends: one process start for all of them."""
    import torch.distributed as dist
    try:
        dist.init_process_group("gloo", init_method=init, rank=rank, world_size=world,
                                timeout=datetime.timedelta(seconds=60))
        group = dist.group.WORLD
        if disagree:
            results = _disagreements(rank, group)
        else:
            results = {}
            cut = steps[rank], steps[rank + 1]
            for backend in BACKENDS:
                for name in _scans(backend, world):
                    outs, grads = _scan_results(name, _rollout(), backend, cut, time_group=group)
                    results[backend, name] = {"outs": outs, "grads": grads}
                for name in LOSSES:
                    x = _share(_batch(), bounds, rank)
                    x["log_probs"].requires_grad_()
                    loss, stats = _loss_and_stats(LOSSES[name](x, backend, group=group))
                    (g,) = torch.autograd.grad(loss, x["log_probs"])
                    results[backend, name] = {"loss": loss.detach(), "stats": [s.detach() for s in stats], "grad": g}
            x, nan = _rollout(), _rollout(nan=True)
            results["gae, NaN"] = _outputs(rl.gae(nan["rewards"][:, cut[0]:cut[1]], x["values"][:, cut[0]:cut[1]],
                                                  gamma=0.9, lambda_=0.8,
                                                  terminated=x["terminated"][:, cut[0]:cut[1]], time_group=group))
        torch.save(results, os.path.join(out_dir, f"{rank}.pt"))
    except Exception as e:  # every rank reports what it raised
        torch.save({"error": f"{type(e).__name__}: {e}", "trace": traceback.format_exc()},
                   os.path.join(out_dir, f"{rank}.pt"))
    finally:
        if dist.is_initialized():
            try:  # every rank past its last collective before any leaves
                dist.barrier()
            finally:  # the results are saved: exit without gloo's teardown, whose threads' destructors
                os._exit(0)  # aborted a rank after its results, "terminate called ..." (two CI runs)


def _run(world, bounds, steps, tmp_path, disagree=False):
    init = f"file://{tmp_path / 'rendezvous'}"
    ctx = mp.spawn(_worker, args=(world, init, bounds, steps, str(tmp_path), disagree), nprocs=world, join=False)
    deadline = datetime.datetime.now() + datetime.timedelta(seconds=DEADLINE_S)
    while not ctx.join(timeout=5):
        if datetime.datetime.now() > deadline:
            for p in ctx.processes:
                p.kill()
            pytest.fail(f"{world} processes still running after {DEADLINE_S} s: a collective hung")
    return [torch.load(tmp_path / f"{r}.pt") for r in range(world)]


@pytest.mark.parametrize("world,bounds,steps", [(2, [0, 15, 37], [0, 8, 17]), (3, [0, 20, 20, 37], [0, 8, 8, 17])],
                         ids=["2 ranks", "3 ranks, one empty"])
def test_over_ranks_is_the_one_process_call(world, bounds, steps, tmp_path):
    """``bounds``: the losses' shares of the batch; ``steps``: the scans' segments of the steps."""
    results = _run(world, bounds, steps, tmp_path)  # (gloo; on a GPU every process on the one GPU)
    for r in results:
        assert "error" not in r, r.get("trace")
    for backend in BACKENDS:
        for name in _scans(backend, world):
            outs, grads = _scan_results(name, _rollout(), backend)
            assert all(bool(o.isfinite().all()) for o in outs) and all(bool(g.abs().sum() > 0) for g in grads), name
            for i, o in enumerate(outs):  # each rank's segment of every output
                torch.testing.assert_close(torch.cat([r[backend, name]["outs"][i] for r in results], -1), o,
                                           rtol=1e-12, atol=1e-12, msg=f"{backend}, {name}, output {i}")
            for k, g, *got in zip(SCANS[name][1], grads, *(r[backend, name]["grads"] for r in results)):
                got = torch.cat(got, -1) if g.dim() == 2 else sum(got)  # per-step inputs by segment, per-row summed
                torch.testing.assert_close(got, g, rtol=1e-10, atol=1e-12, msg=f"{backend}, {name}, d {k}")
        for name, call in LOSSES.items():
            x = _batch()
            x["log_probs"].requires_grad_()
            loss, stats = _loss_and_stats(call(x, backend))
            (g,) = torch.autograd.grad(loss, x["log_probs"])
            for r in results:  # every rank has the global loss and statistics
                torch.testing.assert_close(r[backend, name]["loss"], loss.detach(), rtol=1e-12, atol=1e-12, msg=name)
                for s, e in zip(r[backend, name]["stats"], stats):
                    torch.testing.assert_close(s, e.detach(), rtol=1e-12, atol=1e-12, msg=name)
            # each rank's gradient is the global loss's, for its own elements
            torch.testing.assert_close(torch.cat([r[backend, name]["grad"] for r in results]), g, rtol=1e-12,
                                       atol=1e-12, msg=name)
    # a NaN reward stays in its episode: the steps before its episode (it starts at step 8) are exact
    x, nan = _rollout(), _rollout(nan=True)
    expected = rl.gae(nan["rewards"], x["values"], gamma=0.9, lambda_=0.8, terminated=x["terminated"])
    for i, o in enumerate(expected):
        got = torch.cat([r["gae, NaN"][i] for r in results], -1)
        torch.testing.assert_close(got, o, rtol=1e-12, atol=1e-12, equal_nan=True)
        assert bool(got[0, :8].isfinite().all()) and bool(got[0, 8:13].isnan().all()) and bool(got[1:].isfinite().all())


def test_ranks_that_disagree_get_the_same_error(tmp_path):
    errors = _run(2, None, None, tmp_path, disagree=True)
    assert all("error" not in e for e in errors), [e.get("trace") for e in errors]
    for what, start in (("losses", "ValueError: group: the ranks disagree on the call"),
                        ("scan rows", "ValueError: time_group: the ranks disagree on the call"),
                        ("scan dtype", "ValueError: time_group: the ranks disagree on the call")):
        got = [e[what] for e in errors]
        assert all(g.startswith(start) for g in got), got
        assert got[0] == got[1], got  # the same error on every rank
        assert ("3 rows" in got[0] and "4 rows" in got[0]) if what == "scan rows" else \
            ("float64" in got[0] and "float32" in got[0]), got
