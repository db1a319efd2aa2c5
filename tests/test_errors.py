"""Bad input is refused with a TypeError/ValueError that names the argument."""
from __future__ import annotations

import pytest
import torch

import rltriton_lite as rl

from conftest import DEVICE

B, T = 3, 8


def _data():
    g = torch.Generator().manual_seed(0)
    r = torch.randn(B, T, generator=g).to(DEVICE)
    return r, torch.randn(B, T, generator=g).to(DEVICE)


BAD_CALLS = [
    # (id, call, exception, words the message must contain)
    ("rewards_list", lambda r, v: rl.discounted_returns([1.0, 2.0]), TypeError, "rewards"),
    ("rewards_int", lambda r, v: rl.discounted_returns(r.long()), TypeError, "rewards"),
    ("values_shape", lambda r, v: rl.gae(r, v[:, :-1]), ValueError, "values"),
    ("values_int", lambda r, v: rl.gae(r, v.int()), TypeError, "values"),
    ("values_device", lambda r, v: rl.gae(r, v.to("meta")), ValueError, "values"),
    ("values_missing", lambda r, v: rl.gae(r, None), TypeError, "values"),
    ("next_values_missing", lambda r, v: rl.td_lambda(r, None), TypeError, "next_values"),
    ("next_values_shape", lambda r, v: rl.td_lambda(r, v.t()), ValueError, "next_values"),
    ("gamma_high", lambda r, v: rl.discounted_returns(r, gamma=1.5), ValueError, "gamma"),
    ("gamma_negative", lambda r, v: rl.gae(r, v, gamma=-0.1), ValueError, "gamma"),
    ("gamma_nan", lambda r, v: rl.gae(r, v, gamma=float("nan")), ValueError, "gamma"),
    ("gamma_str", lambda r, v: rl.gae(r, v, gamma="0.9"), TypeError, "gamma"),
    ("gamma_tensor_range", lambda r, v: rl.gae(r, v, gamma=torch.full((B, T), 1.2, device=DEVICE)), ValueError, "gamma"),
    ("gamma_tensor_shape", lambda r, v: rl.gae(r, v, gamma=torch.full((B + 1, T), 0.9, device=DEVICE)), ValueError, "gamma"),
    ("gamma_tensor_int", lambda r, v: rl.gae(r, v, gamma=torch.ones(B, T, dtype=torch.long, device=DEVICE)), TypeError, "gamma"),
    ("lambda_high", lambda r, v: rl.gae(r, v, lambda_=1.01), ValueError, "lambda_"),
    ("lambda_negative", lambda r, v: rl.td_lambda(r, v, lambda_=-1.0), ValueError, "lambda_"),
    ("truncated_without_next_values", lambda r, v: rl.gae(r, v, truncated=torch.zeros(B, T, dtype=torch.bool, device=DEVICE)), ValueError, "next_values"),
    ("terminated_shape", lambda r, v: rl.gae(r, v, terminated=torch.zeros(B, T + 1, dtype=torch.bool, device=DEVICE)), ValueError, "terminated"),
    ("terminated_list", lambda r, v: rl.gae(r, v, terminated=[0] * T), TypeError, "terminated"),
    ("terminated_complex", lambda r, v: rl.gae(r, v, terminated=torch.zeros(B, T, dtype=torch.complex64, device=DEVICE)), TypeError, "terminated"),
    ("mask_shape", lambda r, v: rl.gae(r, v, mask=torch.ones(T, dtype=torch.bool, device=DEVICE)), ValueError, "mask"),
    ("bootstrap_shape", lambda r, v: rl.gae(r, v, bootstrap_value=torch.zeros(B + 2, device=DEVICE)), ValueError, "bootstrap_value"),
    ("bootstrap_and_next_values", lambda r, v: rl.gae(r, v, next_values=v, bootstrap_value=torch.zeros(B, device=DEVICE)), ValueError, "bootstrap_value"),
    ("time_dim_range", lambda r, v: rl.gae(r, v, time_dim=2), ValueError, "time_dim"),
    ("time_dim_float", lambda r, v: rl.gae(r, v, time_dim=1.0), TypeError, "time_dim"),
    ("time_dim_bool", lambda r, v: rl.gae(r, v, time_dim=True), TypeError, "time_dim"),
    ("scalar_rewards", lambda r, v: rl.discounted_returns(torch.tensor(1.0)), ValueError, "time dimension"),
    ("backend_name", lambda r, v: rl.gae(r, v, backend="cuda"), ValueError, "backend"),
    ("scan_b_int", lambda r, v: rl.linear_scan(r, v.long()), TypeError, "b"),
    ("scan_a_shape", lambda r, v: rl.linear_scan(r[:, :3], v), ValueError, "a"),
    ("scan_initial_shape", lambda r, v: rl.linear_scan(r, v, initial=torch.zeros(B + 1, device=DEVICE)), ValueError, "initial"),
    ("scan_mask_shape", lambda r, v: rl.linear_scan(r, v, mask=torch.ones(B, device=DEVICE)), ValueError, "mask"),
]


@pytest.mark.parametrize("call,exc,words", [c[1:] for c in BAD_CALLS], ids=[c[0] for c in BAD_CALLS])
def test_bad_input_is_refused(call, exc, words):
    r, v = _data()
    with pytest.raises(exc, match=words):
        call(r, v)


def test_triton_backend_without_a_way_to_run_it(monkeypatch):
    """backend='triton' on CPU without the interpreter says how to enable it."""
    from rltriton_lite import scan

    monkeypatch.setattr(scan, "INTERPRET", False)
    r = torch.randn(2, 4)
    with pytest.raises(ValueError, match="TRITON_INTERPRET"):
        rl.discounted_returns(r, backend="triton")
    # "auto" falls back to the torch path instead
    torch.testing.assert_close(rl.discounted_returns(r), rl.discounted_returns(r, backend="torch"))
