"""Do atomics change a sum's last bits from call to call on a GPU, where the package's two-stage
reduction does not? (notebook 05, section 3: on a CPU the interpreter runs programs one after another,
so only a GPU can show it). On one GPU, for the same float32 input, calls of:

- a Triton kernel whose programs each add their tile's sum into one number with ``tl.atomic_add``;
- ``torch.sum``;
- ``rl.ppo_clip_loss`` (loss, clip_fraction, approx_kl and the gradient), backend "triton";

and how many different bit patterns each gave:

    PYTHONPATH=$PWD python tools/atomics_probe.py > $OUT/atomics_probe.txt
"""
import datetime

import torch
import triton
import triton.language as tl

import rltriton_lite as rl

CALLS = 100
B, T = 4096, 128  # one of the RL shapes (524,288 elements): 512 programs of 1,024 add into one number


@triton.jit
def _atomic_sum(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.atomic_add(out_ptr, tl.sum(x, axis=0))  # in whatever order the programs finish


def atomic_sum(x, block=1024):
    out = torch.zeros(1, device=x.device, dtype=torch.float32)
    _atomic_sum[(triton.cdiv(x.numel(), block),)](x, out, x.numel(), BLOCK=block)
    return out


def bits(*tensors) -> tuple:
    """The exact bits of every element, as one hashable value."""
    return tuple(t.detach().contiguous().view(torch.int32).cpu().numpy().tobytes() for t in tensors)


g = torch.Generator(device="cuda").manual_seed(0)
# heavy-tailed values: additions in another order round differently
x = torch.randn(B * T, device="cuda", generator=g) * torch.exp(3 * torch.randn(B * T, device="cuda", generator=g))
log_probs = torch.randn(B, T, device="cuda", generator=g) * 0.1
old = log_probs + torch.randn(B, T, device="cuda", generator=g) * 0.05
adv = torch.randn(B, T, device="cuda", generator=g)

atomic = {bits(atomic_sum(x)) for _ in range(CALLS)}
summed = {bits(torch.sum(x).reshape(1)) for _ in range(CALLS)}
ppo = set()
for _ in range(CALLS):
    lp = log_probs.clone().requires_grad_()
    o = rl.ppo_clip_loss(lp, old, adv, normalize_advantages=True, backend="triton")
    (grad,) = torch.autograd.grad(o.loss, lp)
    ppo.add(bits(o.loss.reshape(1), o.clip_fraction.reshape(1), o.approx_kl.reshape(1), grad))
torch.cuda.synchronize()

print(f"# atomics_probe: {torch.cuda.get_device_name()}, torch {torch.__version__}, triton {triton.__version__}; "
      f"{datetime.date.today().isoformat()}, PYTHONPATH=$PWD python tools/atomics_probe.py")
print(f"# {CALLS} calls each on the same float32 input of {B}x{T}; distinct results = how many different bit patterns")
print(f"tl.atomic_add of 512 tile sums: distinct results {len(atomic)}")
print(f"torch.sum: distinct results {len(summed)}")
print(f"rl.ppo_clip_loss (loss, clip_fraction, approx_kl, gradient): distinct results {len(ppo)}")
