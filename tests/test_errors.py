"""Bad input is refused with a TypeError/ValueError that names the argument.

The table of bad calls (every public function, every argument) is ``tests/test_hostile.py``,
which took over this file's former table case by case. What stays here needs the environment.
"""
from __future__ import annotations

import pytest
import torch

import rltriton_lite as rl


def test_triton_backend_without_a_way_to_run_it(monkeypatch):
    """backend='triton' on CPU without the interpreter says how to enable it."""
    from rltriton_lite import plan

    monkeypatch.setattr(plan, "INTERPRET", False)
    r = torch.randn(2, 4)
    with pytest.raises(ValueError, match="TRITON_INTERPRET"):
        rl.discounted_returns(r, backend="triton")
    # "auto" falls back to the torch path instead
    torch.testing.assert_close(rl.discounted_returns(r), rl.discounted_returns(r, backend="torch"))
