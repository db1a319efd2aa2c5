"""Random rollouts for the tests: episode ends, truncations, padding, per-step discounts,
in any layout, with the float64 NumPy view the reference loops take (time last)."""
from __future__ import annotations

import numpy as np
import torch

# name: (batch shape, time_dim); the time axis is inserted at time_dim
LAYOUTS = {
    "batch_major": ((3,), -1),
    "time_major": ((3,), 0),
    "batch3d": ((2, 3), -1),
    "time_major3d": ((2, 3), 0),
    "time_middle": ((2, 3), 1),
    "single": ((), 0),
}


def shape_for(batch, T, time_dim):
    shape = list(batch)
    shape.insert(time_dim if time_dim >= 0 else len(shape) + 1 + time_dim, T)
    return tuple(shape)


class Rollout:
    """Time-last float64 arrays (``np_*``) and the same data as tensors in the asked layout."""

    def __init__(self, rng, batch, T, *, time_dim=-1, dtype=torch.float32, device="cpu",
                 p_term=0.1, p_trunc=0.1, p_pad=0.15, strided=False):
        self.batch, self.T, self.time_dim, self.dtype, self.device = batch, T, time_dim, dtype, device
        self.strided = strided
        full = batch + (T,)
        self.rng = rng
        self._floats = {}
        self.np_terminated = rng.random(full) < p_term
        self.np_truncated = (rng.random(full) < p_trunc) & ~self.np_terminated
        # padding on both sides of some rows, and holes
        self.np_mask = rng.random(full) >= p_pad

    def floats(self, name, scale=1.0, low=None):
        """A float input, rounded through ``dtype`` so the reference sees what the kernel sees."""
        if name not in self._floats:
            shape = self.batch + (self.T,)
            x = self.rng.uniform(low, 1.0, shape) if low is not None else self.rng.standard_normal(shape) * scale
            t = self.to_torch(x, self.dtype)
            self._floats[name] = (t, self.to_numpy(t))
        return self._floats[name]

    def to_torch(self, x, dtype):
        """Time-last array -> tensor with time at ``time_dim`` (a strided view if asked)."""
        t = torch.as_tensor(np.ascontiguousarray(np.moveaxis(x, -1, self.time_dim)))
        t = t.to(dtype=dtype, device=self.device)
        if self.strided:  # every other element of a buffer twice as long in the last dim
            big = torch.zeros(t.shape[:-1] + (2 * t.shape[-1],), dtype=dtype, device=self.device)
            big[..., ::2] = t
            t = big[..., ::2]
            assert not t.is_contiguous() or t.numel() <= 1
        return t

    def to_numpy(self, t):
        return np.moveaxis(t.detach().double().cpu().numpy(), self.time_dim, -1)

    def flag(self, name, dtype=torch.bool):
        return self.to_torch(getattr(self, "np_" + name), dtype)

    def per_row(self, name):
        key = "row:" + name
        if key not in self._floats:
            x = torch.as_tensor(self.rng.standard_normal(self.batch)).to(self.dtype).to(self.device)
            self._floats[key] = (x, x.double().cpu().numpy())
        return self._floats[key]


def episode_ids(done):
    """Per row, which episode every step belongs to (episodes end at done steps)."""
    ids = np.zeros(done.shape, dtype=np.int64)
    ids[..., 1:] = np.cumsum(done[..., :-1], axis=-1)
    return ids


def assert_nan_contained(outs, expected, terminated, row, j):
    """A NaN put at (row, j) poisons exactly the steps <= j of its own episode in ``outs``; every
    other element matches ``expected`` (the reference with the NaN replaced by a number)."""
    done = np.array(terminated, dtype=bool, copy=True)
    done[..., -1] = True
    ep = episode_ids(done)
    T = done.shape[-1]
    poisoned = np.zeros(done.shape, bool)
    poisoned[row] = (ep[row] == ep[row, j]) & (np.arange(T) <= j)
    for o, e in zip(outs, expected):
        o = o.double().cpu().numpy()
        assert np.isnan(o[poisoned]).all()
        assert np.isfinite(o[~poisoned]).all()
        np.testing.assert_allclose(o[~poisoned], e[~poisoned], rtol=1e-5, atol=1e-5)
