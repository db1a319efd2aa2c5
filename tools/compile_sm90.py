"""Compile every kernel variant for an H100/H200 (sm_90) on a machine without a GPU.

The Triton interpreter runs kernels as NumPy and accepts code the compiler may refuse; this
script drives the public API with CPU tensors while a stand-in CUDA driver makes Triton
compile (to cubin, with the ptxas shipped in the Triton wheel) instead of launching. Nothing is
computed: it checks that each specialisation compiles with the installed Triton, and prints
registers and spills per variant. Run it before spending device time:

    python tools/compile_sm90.py            # with the Triton version to check installed
    python tools/compile_sm90.py my_calls.py  # also run a script of API calls (CPU tensors,
                                              # backend="triton") under the same stand-in

Needs Triton's NVIDIA backend (any Linux wheel has it); relies on Triton internals that may
move between versions (checked with 3.6 and 3.9).
"""
from __future__ import annotations

import os
import sys

os.environ.pop("TRITON_INTERPRET", None)
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import torch  # noqa: E402
import triton  # noqa: E402
import triton.runtime.driver as drv  # noqa: E402

from rltriton_lite.exercises import _sm90_driver  # noqa: E402
from rltriton_lite.lab import _ptxas, _usage  # noqa: E402  (the ptxas 13b's compile_for_h100 uses)

drv.set_active(_sm90_driver())  # (importing the package launches nothing)

import rltriton_lite as rl  # noqa: E402
from rltriton_lite import _triton, plan  # noqa: E402
from rltriton_lite.config import Config, using  # noqa: E402

compiled = []
spilled = []
_run = triton.runtime.jit.JITFunction.run
# A few bytes spilled are a register's worth (float64 time-major GAE backward: 4); Triton 3.6's
# replicated bf16 layout spilled 1-16 KB (docs/DESIGN.md, "The scan's tile").
SPILL_LIMIT = 64


_PTXAS = _ptxas()  # _usage: (registers, bytes spilled) of a compiled kernel, from ptxas -v on its PTX


def _compile_only(self, *args, grid, warmup, **kwargs):
    """Every kernel launch compiles (warmup) instead of running."""
    kernel = _run(self, *args, grid=grid, warmup=True, **kwargs)
    named = dict(zip(self.arg_names, args), **kwargs)
    hooks = [named[k].__name__ for k in ("PROLOGUE", "EPILOGUE", "ELEMENTWISE") if k in named]
    tile = ",".join(f"{k}={named[k]}" for k in ("ROWS", "BLOCK", "V", "STAGES") if k in named)
    if named.get("COMPOSE"):
        tile += ",compose"
    tensors = [x for a in args if isinstance(a, tuple) for x in a if isinstance(x, torch.Tensor)] + \
        [x for x in args if isinstance(x, torch.Tensor)]  # the inputs (X) first
    dtype = str(tensors[0].dtype).replace("torch.", "") if tensors else ""
    name = f"{self.__name__}[{'/'.join(hooks)}] {tile} {dtype}"
    compiled.append(name)
    regs, spill = _usage(kernel) if os.path.exists(_PTXAS) else (-1, -1)
    if spill > SPILL_LIMIT:
        spilled.append(f"{name}: {spill} bytes")
    print(f"  {name:<90} shared={kernel.metadata.shared} regs={regs} spills={spill}")
    return kernel


def _install():
    """Every launch of the package's public API on CPU tensors compiles for sm_90 instead of running
    (run as a script; tools/lab_compile_counts.py imports _usage alone)."""
    _triton.FAST_LAUNCH = False  # nothing runs here: every launch goes through JITFunction.run
    # CPU tensors stand for the GPU's: backend="triton" takes the kernels (not the interpreter's plans)
    use_triton = plan.use_triton
    for m in [m for name, m in sys.modules.items() if name.startswith("rltriton_lite") and m is not None]:
        if getattr(m, "use_triton", None) is use_triton:
            m.use_triton = lambda backend, device: backend != "torch"
    triton.runtime.jit.JITFunction.run = _compile_only
    plan.INTERPRET = True  # route CPU tensors to the kernel path


def main():
    print(f"triton {triton.__version__}: compiling for sm_90")
    B, T = 64, 300
    r = torch.randn(B, T, requires_grad=True)
    v = torch.randn(B, T, requires_grad=True)
    nv = torch.randn(B, T, requires_grad=True)
    boot = torch.randn(B, requires_grad=True)
    d = torch.rand(B, T) < 0.1
    g = torch.rand(B, T)
    for dtype in (torch.float32, torch.float64, torch.bfloat16):
        rr, vv, nn, bb = (x.detach().to(dtype).requires_grad_() for x in (r, v, nv, boot))
        for td in (-1, 0):
            tr = (lambda x: x) if td == -1 else (lambda x: x.t().contiguous())  # a real time-major buffer
            kw = dict(terminated=tr(d), mask=tr(~d), time_dim=td, backend="triton")
            outs = [
                rl.discounted_returns(tr(rr), truncated=tr(d), next_values=tr(nn), gamma=tr(g.to(dtype)), **kw),
                rl.discounted_returns(tr(rr), bootstrap_value=bb, **kw),
                *rl.gae(tr(rr), tr(vv), bootstrap_value=bb, **kw),
                *rl.gae(tr(rr), tr(vv), truncated=tr(d), next_values=tr(nn), lambda_=tr(g.to(dtype)), **kw),
                rl.td_lambda(tr(rr), tr(nn), truncated=tr(d), **kw),
                rl.linear_scan(tr(g.to(dtype)).requires_grad_(), tr(rr), initial=bb, mask=tr(d), time_dim=td, backend="triton"),
                rl.linear_scan(tr(g.to(dtype)), tr(rr), reverse=False, time_dim=td, backend="triton"),
            ]
            sum(o.float().sum() for o in outs).backward()
    # SAC (λ = 0 elementwise, λ > 0 on the scan), V-trace, and the losses, in both layouts
    for dtype in (torch.float32, torch.bfloat16):
        rr, q0, q1, lp, aa = (torch.randn(B, T, dtype=dtype, requires_grad=True) for _ in range(5))
        for td in (-1, 0):
            tr = (lambda x: x) if td == -1 else (lambda x: x.t().contiguous())
            kw = dict(terminated=tr(d), mask=tr(~d), time_dim=td, backend="triton")
            outs = [rl.sac_targets(tr(rr), [tr(q0), tr(q1)], tr(lp), **kw),
                    rl.sac_targets(tr(rr), tr(q0), tr(lp), lambda_=0.9, log_probs=tr(aa), **kw),
                    *rl.vtrace(tr(lp), tr(rr), tr(q0), bootstrap_value=q1[:, 0], **kw)]
            sum(o.float().sum() for o in outs).backward()
        m = ~d
        for partial_programs in (Config().partial_programs, 1):  # one tile per program; all in one program's loop
            with using(Config(partial_programs=partial_programs)):
                ppo = rl.ppo_clip_loss(lp, aa.detach(), q0, mask=m, backend="triton")
                crr = rl.crr_loss(lp, q0, q1, mask=m, backend="triton")
                lean = rl.crr_loss(lp, q0, q1, mask=m, need_weights=False, backend="triton")  # weights computed again
                (ppo[0].float() + crr[0].float() + lean[0].float()
                 + rl.sac_actor_loss(lp, [q0, q1], backend="triton").float()).backward()
    # the time split, in three launches and in two (Config.compose), for few long rows
    for compose in (0, 1 << 20):
        with using(Config(min_programs=1 << 20, split_min_chunks=2, compose=compose)):
            for dtype in (torch.float32, torch.bfloat16):
                rr, vv = (torch.randn(8, 3000, dtype=dtype, requires_grad=True) for _ in range(2))
                adv, ret = rl.gae(rr, vv, terminated=torch.rand(8, 3000) < 0.01, bootstrap_value=vv[:, 0].detach(),
                                  backend="triton")
                (adv.float().sum() + ret.float().sum()).backward()
    # a masked call without gradients looks ahead in its own kernel: rows walked whole, and a time split
    for split in (Config(look_ahead=True), Config(look_ahead=True, min_programs=1 << 20, split_min_chunks=2)):
        with using(split):
            for dtype in (torch.float32, torch.bfloat16, torch.float64):
                rr, vv = (torch.randn(8, 3000, dtype=dtype) for _ in range(2))
                mask = torch.rand(8, 3000) < 0.7
                rl.gae(rr, vv, mask=mask, backend="triton")
                rl.vtrace(rr, rr, vv, bootstrap_value=vv[:, 0], mask=mask, backend="triton")
    print(f"OK: {len(compiled)} kernel launches compiled")


if __name__ == "__main__":
    _install()
    main()
    for script in sys.argv[1:]:
        import runpy

        n = len(compiled)
        runpy.run_path(script, run_name="__main__")
        print(f"OK: {len(compiled) - n} kernel launches of {script} compiled")
    if spilled:  # a spilling kernel is a slow one (Triton 3.6's replicated bf16 layout, 34x slower)
        print("FAILED: register spills in\n  " + "\n  ".join(spilled))
        sys.exit(1)
